from iosim.cli import main

main()
