from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=50, unique=True)
    code = models.UUIDField(null=True)

    class Meta:
        app_label = "shop"


class Book(models.Model):
    name = models.CharField(max_length=150)
    author = models.ForeignKey(Author, on_delete=models.CASCADE)
    pages = models.BigIntegerField(default=200)
    published = models.DateTimeField(null=True)
    isbn = models.CharField(max_length=20, null=True, unique=True)
    editor = models.ForeignKey(
        Author, default=1, on_delete=models.PROTECT, related_name="edited"
    )

    class Meta:
        app_label = "shop"
        indexes = [models.Index(fields=["name"], name="book_title_idx")]
