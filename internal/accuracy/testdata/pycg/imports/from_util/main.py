from util import helper


def main():
    helper()


main()
