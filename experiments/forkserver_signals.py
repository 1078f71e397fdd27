"""Imported by the local launcher's fork server (``launcher.preload``) only: SIGINT ignored.

The fork server takes the signal handlers its children start with after importing its
preload modules, so every job process starts with SIGINT ignored. A Ctrl-C reaches every
process of the terminal's group: the sweep's main process stops, and tells each job to
stop (with the reason) itself; a job interrupted by the same Ctrl-C before it had even
read its payload would print a traceback instead (issue 31). Importing this module
anywhere else would make that process ignore Ctrl-C: only the fork server does.
"""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
