from __future__ import annotations

from attractor.cli.entry import main

if __name__ == "__main__":
    main()
