"""What runs inside the allocation: supervisor, agent, ledger, classifier, releaser."""
