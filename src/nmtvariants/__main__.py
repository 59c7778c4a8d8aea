from nmtvariants.cli import main

raise SystemExit(main())
