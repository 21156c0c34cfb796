"""The one fault table (faults.json, installed beside this module): each diagnosis code's severity,
summary and remedy. The host's diagnosis table (nodefleet_health.py, whose diagnoses the role
health tools report too) and, through components/config/faults.ts, the alert rules read it, so an
alert, `nodefleet status` and the stack output `health` give one remedy."""
import json
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "faults.json"), encoding="utf-8") as _f:
    FAULTS = json.load(_f)


def remedy(code, unit=None, p2p=None):
    """The table's remedy for `code`, its <unit> and <p2p port> filled in when given."""
    text = FAULTS[code]["remedy"]
    if unit is not None:
        text = text.replace("<unit>", unit)
    if p2p is not None:
        text = text.replace("<p2p port>", p2p)
    return text
