"""An application written for PostgreSQL with SQLAlchemy 2's ORM and its default
psycopg dialect, run unchanged against a server: two related models (generated keys, a
unique column, a server default, a foreign key with ON DELETE CASCADE, a CHECK; uuid,
bytea, timestamptz and unconstrained numeric columns) are
created, reflected, filled through their relationship, queried, changed, upserted
(INSERT … ON CONFLICT), streamed through a server-side cursor and dropped. It prints
`OK` at the end; any failure names its step.

Usage: python3 sqlalchemy_app.py PORT
"""

import datetime
import decimal
import sys
import uuid

import psycopg

from sqlalchemy import (
    CheckConstraint,
    DateTime,
    ForeignKey,
    Integer,
    Interval,
    LargeBinary,
    Numeric,
    String,
    Uuid,
    create_engine,
    func,
    inspect,
    select,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    Session,
    mapped_column,
    relationship,
)


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "author"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50), unique=True)
    books: Mapped[list["Book"]] = relationship(
        back_populates="author", passive_deletes=True, order_by="Book.id"
    )


class Book(Base):
    __tablename__ = "book"
    __table_args__ = (CheckConstraint("pages > 0", name="book_pages_positive"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(100))
    pages: Mapped[int] = mapped_column(Integer, server_default="100")
    author_id: Mapped[int] = mapped_column(
        ForeignKey("author.id", ondelete="CASCADE"), index=True
    )
    author: Mapped[Author] = relationship(back_populates="books")
    uid: Mapped[uuid.UUID] = mapped_column(Uuid, default=uuid.uuid4, unique=True)
    cover: Mapped[bytes | None] = mapped_column(LargeBinary)
    added: Mapped[datetime.datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now()
    )
    reading_time: Mapped[datetime.timedelta | None] = mapped_column(Interval)
    price: Mapped[decimal.Decimal | None] = mapped_column(Numeric)


def main(port: str) -> None:
    engine = create_engine(f"postgresql+psycopg://pmdb@127.0.0.1:{port}/pmdb")
    step = "start"
    try:
        step = "drop_all"
        Base.metadata.drop_all(engine)
        step = "create_all"
        Base.metadata.create_all(engine)
        step = "inspect"
        inspector = inspect(engine)
        tables = sorted(inspector.get_table_names())
        assert {"author", "book"} <= set(tables), tables
        keys = inspector.get_foreign_keys("book")
        assert [
            (k["constrained_columns"], k["referred_table"], k["referred_columns"])
            for k in keys
        ] == [(["author_id"], "author", ["id"])], keys
        assert keys[0]["options"].get("ondelete") == "CASCADE", keys
        step = "insert"
        with Session(engine) as s:
            ann, bob = Author(name="ann"), Author(name="bob")
            s.add_all([ann, bob])
            s.flush()
            assert ann.id is not None and bob.id == ann.id + 1, (ann.id, bob.id)
            bob_id = bob.id
            s.add_all(
                [
                    Book(title="one", author_id=ann.id),
                    Book(title="two", author_id=ann.id),
                    Book(title="three", author_id=bob.id, pages=7),
                ]
            )
            s.commit()
            step = "query"
            books = s.scalars(select(Book).order_by(Book.id)).all()
            got = [(b.title, b.pages, b.author_id) for b in books]
            assert got == [("one", 100, ann.id), ("two", 100, ann.id), ("three", 7, bob.id)], got
            total = s.scalar(
                select(func.sum(Book.pages)).where(Book.author_id == ann.id)
            )
            assert total == 200, total
            step = "types"
            books[2].cover = bytes(range(256))
            s.commit()
            three = s.scalars(select(Book).where(Book.uid == books[2].uid)).one()
            assert three.title == "three" and three.cover == bytes(range(256)), three
            assert three.added.tzinfo is not None, three.added
            age = datetime.datetime.now(datetime.timezone.utc) - three.added
            assert datetime.timedelta(0) <= age < datetime.timedelta(minutes=5), age
            three.reading_time = datetime.timedelta(hours=2, minutes=30)
            books[0].reading_time = datetime.timedelta(days=1, seconds=-1)
            s.commit()
            long_reads = s.scalars(
                select(Book.title)
                .where(Book.reading_time > datetime.timedelta(hours=1))
                .order_by(Book.reading_time.desc())
            ).all()
            assert long_reads == ["one", "three"], long_reads
            assert s.get(Book, three.id).reading_time == datetime.timedelta(hours=2, minutes=30)
            assert len({b.uid for b in books}) == 3
            books[0].price = decimal.Decimal("19.99")
            books[1].price = decimal.Decimal("0.0000000001")
            s.commit()
            price = s.scalar(select(func.sum(Book.price)))
            assert price == decimal.Decimal("19.9900000001"), price
            assert s.get(Book, books[0].id).price == decimal.Decimal("19.99")
            step = "update"
            books[0].pages = 150
            s.commit()
            assert s.get(Book, books[0].id).pages == 150
            step = "unique"
            s.add(Author(name="ann"))
            try:
                s.commit()
                raise AssertionError("a second 'ann' was accepted")
            except IntegrityError:
                s.rollback()
            step = "nested"
            with s.begin():
                s.add(Author(name="cy"))
                with s.begin_nested() as inner:
                    s.add(Author(name="bob"))
                    try:
                        s.flush()
                    except IntegrityError:
                        inner.rollback()
            names = s.scalars(select(Author.name).order_by(Author.id)).all()
            assert names == ["ann", "bob", "cy"], names
            step = "relationship"
            ann = s.scalars(select(Author).where(Author.name == "ann")).one()
            assert [b.title for b in ann.books] == ["one", "two"], ann.books
            cy = s.scalars(select(Author).where(Author.name == "cy")).one()
            cy.books.append(Book(title="four", pages=4))
            s.commit()
            assert s.get(Book, cy.books[0].id).author.name == "cy"
            step = "foreign key"
            s.add(Book(title="orphan", author_id=9999))
            try:
                s.commit()
                raise AssertionError("a book without its author was accepted")
            except IntegrityError:
                s.rollback()
            step = "check"
            s.add(Book(title="empty", pages=0, author_id=ann.id))
            try:
                s.commit()
                raise AssertionError("a book of 0 pages was accepted")
            except IntegrityError:
                s.rollback()
            step = "delete"
            s.delete(books[1])
            s.commit()
            assert s.scalar(select(func.count()).select_from(Book)) == 3
            step = "cascade"
            s.delete(s.get(Author, ann.id))
            s.commit()
            assert s.scalar(select(func.count()).select_from(Book)) == 2
        step = "upsert"
        with engine.begin() as conn:
            for name in ["dee", "dee", "cy"]:
                stmt = pg_insert(Author).values(name=name)
                conn.execute(stmt.on_conflict_do_nothing(index_elements=["name"]))
            stmt = pg_insert(Book).values(id=1000, title="up", pages=1, author_id=bob_id)
            for _ in range(3):
                conn.execute(
                    stmt.on_conflict_do_update(
                        index_elements=["id"], set_={"pages": Book.pages + 1}
                    )
                )
            assert conn.scalar(select(Book.pages).where(Book.id == 1000)) == 3
            names = conn.scalars(select(Author.name).order_by(Author.name)).all()
            assert names == ["bob", "cy", "dee"], names
        step = "stream_results"
        with engine.connect() as conn:
            result = conn.execution_options(stream_results=True, max_row_buffer=2).execute(
                select(Book.title).order_by(Book.id)
            )
            titles = [row.title for row in result]
            assert titles == ["three", "four", "up"], titles
        step = "prepared statements across a failed transaction"
        with engine.connect() as conn:
            # psycopg prepares a query run five times, and after a rollback sends
            # DEALLOCATE ALL.
            raw = conn.connection.driver_connection
            query = "SELECT count(*) FROM author WHERE id > %s"
            for i in range(8):
                raw.execute(query, (i,)).fetchone()
            try:
                raw.execute("SELECT 1/0")
                raise AssertionError("1/0 gave a result")
            except psycopg.errors.DivisionByZero:
                raw.rollback()
            assert raw.execute(query, (0,)).fetchone()[0] == 3
        step = "drop_all again"
        Base.metadata.drop_all(engine)
        print("OK")
    except Exception as e:  # noqa: BLE001 - the step is what the caller needs
        first = str(e).splitlines()[0] if str(e) else ""
        print(f"FAILED at {step}: {type(e).__name__}: {first}")
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1])
