"""A Django application's migrations and ORM, run unchanged against a server: the
migrations create two models (serial keys, a unique column, a foreign key Django
declares DEFERRABLE INITIALLY DEFERRED), load rows, then change the loaded tables (a
column added with a default, a timestamptz and a uuid column, an index, a column
renamed, a nullable unique column, a foreign key column with a default and its
constraint inline, which Django checks at once with SET CONSTRAINTS … IMMEDIATE). The
ORM then reads through the relation, writes in a transaction and inserts in bulk
(`bulk_create`: one INSERT … SELECT * FROM UNNEST of an array parameter per column).
It prints `OK` at the end; any failure raises.

Usage: python3 run.py PORT [HOST]
"""

from shop_settings import set_up

set_up()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from shop.models import Author, Book  # noqa: E402

call_command("migrate", "shop", verbosity=0)
assert Book.objects.count() == 200, Book.objects.count()
assert Book.objects.filter(pages=100, editor_id=1).count() == 200
first = Book.objects.select_related("author").order_by("id").first()
assert (first.name, first.author.name) == ("book 0.0", "author 0"), first
assert Author.objects.filter(code__isnull=False).count() == 50
with transaction.atomic():
    a = Author.objects.create(name="new")
    Book.objects.create(name="x", author=a, published=timezone.now(), isbn="123")
got = Book.objects.filter(author__name="new").values_list("name", "pages", "isbn").get()
assert got == ("x", 200, "123"), got
Author.objects.filter(name="new").delete()
assert Book.objects.count() == 200
made = Author.objects.bulk_create([Author(name=f"bulk {i}") for i in range(3)])
assert sorted(a.name for a in made) == ["bulk 0", "bulk 1", "bulk 2"], made
assert all(a.pk is not None for a in made), [a.pk for a in made]
assert Author.objects.filter(name__startswith="bulk ").count() == 3
Author.objects.filter(name__startswith="bulk ").delete()
with connection.cursor() as c:
    c.execute("DROP TABLE shop_book, shop_author, django_migrations")
print("OK")
