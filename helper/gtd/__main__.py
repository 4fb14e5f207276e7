from __future__ import annotations

from gtd.cli import main

if __name__ == "__main__":
    main()
