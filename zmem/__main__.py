from zmem.cli.entry import main

main()
