from logging import info

from util import helper


def main():
    helper()
    info("done")


main()
