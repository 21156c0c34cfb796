"""nodefleet's host tool for a 0G chain validator (0gchaind + geth or reth) and the geth -> reth
switch, run by the role's remote steps as root:

    zg-validator.py <settings.json> setup
    zg-validator.py <settings.json> migrate <step> <inputs-hash>
    zg-validator.py <settings.json> rollback
    zg-validator.py <settings.json> cleanup
    zg-validator.py <settings.json> health
    zg-validator.py <settings.json> status
    zg-validator.py <settings.json> handover
    zg-validator.py <settings.json> upgrade-watch

handover (handover.py) runs on the host a validator leaves: its daemons stopped and disabled,
its key set aside, its signing state reported for the new host (setup carries it on).

status is health without any remedy (it changes nothing on the host), with the facts of
`nodefleet status`: the state file, the network's head, a running export or import's progress.

upgrade-watch (upgrade.py) is the process of an upgrade's watcher unit: at the upgrade height it
stops 0gchaind and starts the staged release; setup arms and disarms it.

Every command prints progress lines and ends with one JSON report line. Every command but status
and upgrade-watch (which takes it at the height) holds the node's lock (lock.py): a run finding an earlier one still there (a killed pulumi's)
stops it and takes over.

migrate runs one of the 14 steps (switch.STEPS). Each step checks its preconditions on the host,
acts, and writes a completion marker (<state>/migration/<step>.json, with the inputs hash it ran
with); a step whose marker is there is skipped, so a re-run after any interruption resumes at
the first unfinished step. A marker with another inputs hash is refused: finish the switch with
the settings it started with, or roll back. Export and import run as transient systemd units
(nodefleet-export-<node>, nodefleet-import-<node>); the step starts the unit or attaches to the
one running and prints progress until it ends, so a dropped SSH session loses nothing.

Failpoints for the fault tests: while /run/nodefleet/failpoints/<export|import>-hold exists,
the export or import unit waits before it starts (it is already running, so a test can kill
`pulumi up` or reboot the host at that point). /run is emptied on reboot.
"""
