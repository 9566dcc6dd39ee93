"""The data folder as the Training page offers it: uploads kept under safe names, reused or kept apart by
content, within a size bound; the listing of table files, which never leaves the folder."""
import hashlib
import tempfile

import pytest

from disan.data import uploads
from disan.data.files import DataError

pytestmark = pytest.mark.quick

CSV = b"text,label\nfine,positive\nbad,negative\n"


@pytest.mark.parametrize("given,kept", [
    ("reviews.csv", "reviews.csv"),
    ("../../etc/passwd.csv", "passwd.csv"),
    ("/abs/path/to/Data.TSV", "Data.tsv"),
    ("C:\\Users\\me\\my reviews (1).jsonl", "my_reviews__1_.jsonl"),
    (".hidden.csv", "hidden.csv"),
    ("...csv.csv", "csv.csv"),
    ("a/b\\..\\c;rm -rf.csv", "c_rm_-rf.csv"),
])
def test_an_upload_is_kept_under_its_last_path_part_without_a_leading_dot(given, kept):
    assert uploads.safe_name(given) == kept


@pytest.mark.parametrize("given", ["notes.txt", "table.xlsx", "noextension", ".csv", "dir/", "..", "_.csv"])
def test_a_name_without_a_table_extension_or_stem_is_refused(given):
    with pytest.raises(DataError, match="unknown format|no name before"):
        uploads.safe_name(given)


def test_a_long_name_is_cut_before_its_extension():
    name = uploads.safe_name("x" * 300 + ".csv")
    assert name == "x" * uploads.MAX_STEM + ".csv"


def test_the_same_upload_is_reused_and_other_content_gets_its_own_name(tmp_path):
    first = uploads.save_upload(tmp_path / "uploads", "reviews.csv", CSV, 1)
    assert first == (tmp_path / "uploads" / "reviews.csv").resolve() and first.read_bytes() == CSV
    assert uploads.save_upload(tmp_path / "uploads", "some/where/reviews.csv", CSV, 1) == first  # same name, same bytes
    other = CSV + b"more,positive\n"
    second = uploads.save_upload(tmp_path / "uploads", "reviews.csv", other, 1)
    digest = hashlib.sha256(other).hexdigest()
    assert second.name == f"reviews-{digest[:12]}.csv" and second.read_bytes() == other
    assert first.read_bytes() == CSV  # never replaced
    assert uploads.save_upload(tmp_path / "uploads", "reviews.csv", other, 1) == second
    assert sorted(p.name for p in (tmp_path / "uploads").iterdir()) == sorted([first.name, second.name])


def test_an_upload_over_the_bound_is_refused_and_nothing_is_written(tmp_path):
    data = b"text,label\n" + b"x,y\n" * (2**20 // 4 + 1)  # just over 1 MB
    with pytest.raises(DataError, match="limited to 1 MB"):
        uploads.save_upload(tmp_path / "uploads", "big.csv", data, 1)
    assert not (tmp_path / "uploads").exists() or not any((tmp_path / "uploads").iterdir())
    assert uploads.save_upload(tmp_path / "uploads", "big.csv", data, 2).stat().st_size == len(data)
    uploads.check_size(2**20, 1)  # exactly the bound is allowed
    with pytest.raises(DataError):
        uploads.check_size(2**20 + 1, 1)


def test_a_staged_upload_is_a_private_copy_outside_the_data_folder_until_discarded(tmp_path, monkeypatch):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    staged = uploads.stage_upload("C:\\me\\my reviews.csv", CSV, 1)
    assert staged.name == "my_reviews.csv" and staged.read_bytes() == CSV and staged.parent.parent == temporary
    assert staged.parent.stat().st_mode & 0o777 == 0o700
    uploads.discard(staged)
    assert list(temporary.iterdir()) == []
    for name, data, message in (("big.csv", CSV * (2**20 // len(CSV) + 1), "limited to 1 MB"),
                                ("notes.txt", CSV, "unknown format")):
        with pytest.raises(DataError, match=message):
            uploads.stage_upload(name, data, 1)
        assert list(temporary.iterdir()) == []


def test_the_bound_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(uploads.UPLOAD_ENV, raising=False)
    assert uploads.upload_limit_mb() == 50
    monkeypatch.setenv(uploads.UPLOAD_ENV, "7")
    assert uploads.upload_limit_mb() == 7
    for bad in ("0", "-3", "1.5", "lots"):
        monkeypatch.setenv(uploads.UPLOAD_ENV, bad)
        with pytest.raises(ValueError, match=uploads.UPLOAD_ENV):
            uploads.upload_limit_mb()


def test_the_listing_holds_the_table_files_of_the_top_only(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_bytes(CSV)
    folder = tmp_path / "data"
    (folder / "uploads").mkdir(parents=True)
    (folder / "SST").mkdir()
    for name in ("a.csv", "b.TSV", "c.jsonl", "notes.txt", ".hidden.csv", "uploads/u.csv", "SST/s.csv"):
        (folder / name).write_bytes(CSV)
    (folder / "link-out.csv").symlink_to(outside / "secret.csv")
    (folder / "link-in.csv").symlink_to(folder / "a.csv")
    (folder / "dir.csv").mkdir()
    listed = uploads.table_files(folder)
    assert list(listed) == ["a.csv", "b.TSV", "c.jsonl", "link-in.csv"]
    assert all(p.resolve().is_relative_to(folder.resolve()) for p in listed.values())
    assert listed["c.jsonl"].read_bytes() == CSV
    assert uploads.table_files(tmp_path / "none") == {}
