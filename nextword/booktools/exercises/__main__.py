"""``python -m nextword.booktools.exercises ...``: the older spelling of ``nextword exercises ...`` (the
generated exercises' headers print it), kept working; ``grade`` is ``nextword grade``."""

import sys

from nextword.__main__ import main

args = sys.argv[1:] or ["build"]
sys.exit(main(args if args[0] == "grade" else ["exercises", *args]))
