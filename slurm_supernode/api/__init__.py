"""snrun from Python: the layer every CLI verb stands on (the CLI parses arguments, then
makes one call here). See docs/api.md."""
