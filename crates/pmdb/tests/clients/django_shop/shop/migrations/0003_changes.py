import uuid

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("shop", "0002_load")]
    operations = [
        migrations.AddField("book", "pages", models.IntegerField(default=100)),
        migrations.AddField("book", "published", models.DateTimeField(null=True)),
        migrations.AddField(
            "author", "code", models.UUIDField(default=uuid.uuid4, null=True)
        ),
        migrations.AddIndex(
            "book", models.Index(fields=["title"], name="book_title_idx")
        ),
        migrations.RenameField("book", "title", "name"),
        migrations.AddField(
            "book", "isbn", models.CharField(max_length=20, null=True, unique=True)
        ),
        migrations.AlterField("book", "pages", models.IntegerField(default=200)),
        migrations.AddField(
            "book",
            "editor",
            models.ForeignKey(
                default=1,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="edited",
                to="shop.author",
            ),
        ),
    ]
