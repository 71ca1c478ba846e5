from zmem.cli import main

main()
