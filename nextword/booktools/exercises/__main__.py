"""``python -m nextword.booktools.exercises [build|check|grade [part]]``."""
import sys

from nextword.booktools.exercises.build import main as build_main
from nextword.booktools.exercises.grade import main as grade_main

args = sys.argv[1:]
sys.exit(grade_main(args[1:]) if args[:1] == ["grade"] else build_main(args))
