from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("shop", "0003_changes")]
    operations = [
        migrations.AddField("book", "blurb", models.TextField(null=True)),
        migrations.AlterField("book", "name", models.CharField(max_length=150)),
        migrations.AlterField("book", "pages", models.BigIntegerField(default=200)),
        migrations.RemoveField("book", "blurb"),
    ]
