"""`python -m clm_sandbox.demo` runs the demo (clm_sandbox.demo.steps)."""

from clm_sandbox.demo.steps import main

main()
