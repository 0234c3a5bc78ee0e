"""``python -m nextword.booktools.exercises [build|check|copy DIR|export …|grade …]``: the older spelling of
``nextword exercises …`` (the generated exercises' headers print it), kept working."""

import sys

from nextword.booktools.exercises.build import copy_main
from nextword.booktools.exercises.build import main as build_main
from nextword.booktools.exercises.export import export_main
from nextword.booktools.exercises.grade import main as grade_main

args = sys.argv[1:]
commands = {"grade": grade_main, "export": export_main, "copy": copy_main}
sys.exit(commands[args[0]](args[1:]) if args[:1] and args[0] in commands else build_main(args))
