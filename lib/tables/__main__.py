import sys

from lib.tables.registry import main

sys.exit(main())
