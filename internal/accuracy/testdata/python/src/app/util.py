"""Helpers with names that are keywords in other languages."""
import functools


def func(x):
    return x + 1


def map(f, xs):
    return [f(x) for x in xs]


def range(n):
    return list(builtin_range(n))


def builtin_range(n):
    return [i for i in __builtins__["range"](n)]


def type(x):
    return str(x)


def select(rows, pred):
    return [r for r in rows if pred(r)]


def delete(store, key):
    store.pop(key, None)


def lock(m):
    return m


def traced(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        log("call")
        return fn(*args, **kwargs)
    return wrapper


def log(msg):
    print(msg)
