"""Tools offered to the model: the `Tool` protocol, the registry, and the tools themselves."""
