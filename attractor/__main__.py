from __future__ import annotations

from attractor.cli.main import main

if __name__ == "__main__":
    main()
