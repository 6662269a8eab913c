"""Tests Django's own runner runs in the test database it makes (test_runner.py): each
TestCase test in a block rolled back after it, with savepoints for atomic()."""

from django.db import IntegrityError, connection, transaction
from django.test import TestCase, TransactionTestCase

from .models import Author, Book


class ShopTests(TestCase):
    def test_the_migrations_loaded_the_rows(self):
        self.assertEqual(Book.objects.count(), 200)
        self.assertEqual(connection.settings_dict["NAME"], "test_pmdb")

    def test_a_write_is_seen_in_its_test(self):
        Author.objects.create(name="only in this test")
        self.assertTrue(Author.objects.filter(name="only in this test").exists())

    def test_writes_of_other_tests_are_gone(self):
        self.assertFalse(Author.objects.filter(name="only in this test").exists())

    def test_a_unique_violation_rolls_back_to_its_savepoint(self):
        Author.objects.create(name="twice")
        with self.assertRaises(IntegrityError), transaction.atomic():
            Author.objects.create(name="twice")
        self.assertEqual(Author.objects.filter(name="twice").count(), 1)


class FlushedTests(TransactionTestCase):
    # Commits for real; Django empties the tables after it.
    available_apps = ["shop"]

    def test_commits_then_flush(self):
        with transaction.atomic():
            Author.objects.create(name="committed")
        self.assertTrue(Author.objects.filter(name="committed").exists())
