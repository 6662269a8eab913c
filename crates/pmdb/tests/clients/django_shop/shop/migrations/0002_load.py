from django.db import migrations


def load(apps, schema_editor):
    Author = apps.get_model("shop", "Author")
    Book = apps.get_model("shop", "Book")
    for i in range(50):
        a = Author.objects.create(name=f"author {i}")
        for j in range(4):
            Book.objects.create(title=f"book {i}.{j}", author=a)


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]
    operations = [migrations.RunPython(load, migrations.RunPython.noop)]
