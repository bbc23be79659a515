import sys

from tests.conformance.recorder.record import main

sys.exit(main(sys.argv[1:]))
