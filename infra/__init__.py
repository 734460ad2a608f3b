"""CDK constructs of CLM: registry table, config store and (with the workflows) functions and state machines."""
