"""Starting a validator's daemons in order, execution client first (setup, and the upgrade at a
height when it swaps releases), and the warning for a unit not running after its start."""
import sys

from .host import Failed, active, journal, listening, say, systemctl, wait
from nodefleet_rpc import cut_urls


def warn_not_running(v, units):
    """The units of `units` not running, each with its journal's last lines and a warning on stderr."""
    down = [unit for unit in units if not active(unit)]
    for unit in down:
        sys.stderr.write(cut_urls(journal(unit, lines=15).strip()[-600:]) + "\n")
        sys.stderr.write(f"validator {v.node}: warning: {unit} is not running: its health step judges it\n")
    return down


def start_in_order(v, el_unit, engine_port, changed):
    """Starts, or restarts what changed, execution client first. An execution client restarted
    under a running consensus daemon misses the blocks the daemon accepts meanwhile (it accepts
    the SYNCING answer and goes on with its network): the daemon is stopped first, and started
    again once the execution client answers on its engine port, so it hands over every block; one
    that does not answer within 120 s is warned of and the daemon is left stopped.
    Returns the units restarted, in the order they started again."""
    cl = v.units["consensus"]
    restarted = []
    restart_el = active(el_unit) and el_unit in changed
    held = restart_el and active(cl)
    if held:
        say(f"{el_unit} changed: {cl} stopped while it restarts")
        v.stop(cl)
    if not active(el_unit):
        systemctl("start", el_unit)
    elif restart_el:
        systemctl("restart", el_unit)
        restarted.append(el_unit)
    try:
        wait(f"{el_unit} to listen on the engine port {engine_port}", lambda: listening(engine_port), 120)
    except Failed as e:
        # Warned, not failed (as a unit not running after its start, below in setup): the daemon
        # stays stopped, and the health step fails for it.
        sys.stderr.write(f"validator {v.node}: warning: {e}; its log: {journal(el_unit, lines=5).strip()[-800:]}; {cl} is left stopped\n")
        return restarted
    if not active(cl):
        v.start_consensus()
        if held:
            restarted.append(cl)
    elif cl in changed:
        systemctl("restart", cl)
        restarted.append(cl)
    return restarted
