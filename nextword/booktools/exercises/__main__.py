import sys

from nextword.booktools.exercises.build import main

sys.exit(main())
