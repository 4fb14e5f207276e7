"""`gtd demo` and what it shares with the end-to-end tests: the scripted model
(``model_server``: a Messages API on 127.0.0.1; ``model_rules``: how the model acts
in a `/gtd:auto-cycle` tick)."""
