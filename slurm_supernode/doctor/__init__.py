"""``snrun doctor``: the field's six-step troubleshooting checklist as one command."""
