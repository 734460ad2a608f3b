"""CLM core library: model, registry, config sources and rendering.

Handlers and the CLI call into this package; it never imports either of them.
"""

__version__ = "0.1.0"
