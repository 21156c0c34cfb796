#!/usr/bin/env -S python3 -S
"""nodefleet's host tool for a 0G chain validator: the entry point of the zgvalidator package
installed beside it (its docstring says the commands). The scripts it shares with the other host
tools (nodefleet_rpc.py, trim_export.py, set-rpc-dial-url.py, consensus-height-rollback.py) are
in the same directory."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zgvalidator.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv))
