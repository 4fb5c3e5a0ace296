from app.models import User
from app.util import func, map, range, type, select, delete


def create(name):
    u = User(name)
    u.save()
    return func(len(name))


def report(users):
    names = map(type, users)
    ids = range(3)
    return select(names, lambda n: n in ids)


def purge(store, key):
    delete(store, key)
    return func(key)
