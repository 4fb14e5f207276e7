"""`gtd demo`: a night of auto mode on a sample project shipped with the package.

- ``sample/`` — the project (package data): a shopping cart, its pytest suite and a
  four-task PLAN.md;
- ``project`` — the throwaway repository made from it;
- ``implementer`` — the scripted agent: the only scripted part of the headless demo;
- ``night`` — the headless night through the real `gtd` commands, checked against
  the script;
- ``in_claude`` — the same night inside the real Claude Code (`claude -p`), with the
  model's replies scripted by ``model_rules`` and served by ``model_server`` on
  127.0.0.1 (the end-to-end tests drive Claude Code with the same two modules).
"""
