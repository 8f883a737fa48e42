"""The hostile run: every hostile input of issue 15, built for real, through every command that could touch it.

``inputs`` builds each case in a temporary directory — real git repositories with a bare remote, folder stores,
FIFOs, symbolic links, submodules, hooks, credentials in URLs, environment and config files, absurd numbers in
headings and flags — and lists the statefile commands to run on it.  ``suite`` runs each command as its own process
with 1 GiB of address space and a 10 s timeout and checks what every hostile input must never cause: a hang, exit
70 (internal error), a traceback, an error of more than one line, or a secret in any output.

    python tests/hostile                 # every case; a summary table; exit 1 on any violation
    python tests/hostile --list          # the cases, with the issue-15 case each one keeps
    python tests/hostile -k fifo -v      # some cases, every command shown

``tests/e2e/test_hostile_run.py`` runs a representative subset in the normal test run, through the same code.
"""
