from zmem.cli.app import main

main()
