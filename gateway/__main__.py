from gateway.platform.cli import main

raise SystemExit(main())
