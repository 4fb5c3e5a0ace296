from app.util import traced, lock, log


class Base:
    registry = []

    def save(self):
        self.validate()
        log("saved")

    def validate(self):
        return True


def register(cls):
    Base.registry.append(cls)
    return cls


@register
class User(Base):
    kind = lock("user")

    def __init__(self, name):
        self.name = name
        self.normalize()

    @traced
    def normalize(self):
        def clean(s):
            return strip_spaces(s)
        self.name = clean(self.name)

    def save(self):
        self.validate()
        super().save()


def strip_spaces(s):
    return s.strip()
