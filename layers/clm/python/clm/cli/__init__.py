"""The `clm` command line: registry, rendering and (later) workflows, against AWS or the sandbox."""
