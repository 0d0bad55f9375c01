from hpu_port.cli import main

main()
