def info(msg):
    print(msg)


def helper():
    info("helper")


def main():
    helper()


main()
