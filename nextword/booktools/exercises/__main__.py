import sys

from nextword.exercises.build import main

sys.exit(main())
