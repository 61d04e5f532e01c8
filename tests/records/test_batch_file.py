"""A batch's question file as a user writes it: CSV, JSON Lines or plain
text, told apart by extension or content; each problem is one line naming
the row; a file that cannot be used raises, a row that can be skipped is a
note. And the batch's ids: the same questions are the same batch and the same
tasks, however the file is spelled."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.batch import QuestionFileError, QuestionRow, batch_id_of, check_batch_name, question_task_id
from schemas.bundle import check_identifier
from tasks.records.batch import read_questions, rows_of_records


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def questions(found) -> list[tuple]:
    return [(r.row, r.question, r.library, r.providers, r.target) for r in found.rows]


# -- the three formats ----------------------------------------------------------------

def test_text_file_one_question_per_line(tmp_path):
    found = read_questions(write(tmp_path, "q.txt", "How do panels age?\n  What is a kWh?  \n"))
    assert questions(found) == [(1, "How do panels age?", None, None, None), (2, "What is a kWh?", None, None, None)]
    assert found.notes == []


def test_csv_with_per_row_options(tmp_path):
    text = 'question,library,providers,target\n"Panels, in heat?",docs,"library,arxiv",3\nWhat is a kWh?,,,\n'
    found = read_questions(write(tmp_path, "q.csv", text))
    assert questions(found) == [(2, "Panels, in heat?", "docs", ("library", "arxiv"), 3),
                                (3, "What is a kWh?", None, None, None)]


def test_jsonl_with_the_same_keys(tmp_path):
    text = '{"question": "How do panels age?", "providers": ["library"], "target": 2}\n{"question": "What is a kWh?"}\n'
    found = read_questions(write(tmp_path, "q.jsonl", text))
    assert questions(found) == [(1, "How do panels age?", None, ("library",), 2), (2, "What is a kWh?", None, None, None)]


@pytest.mark.parametrize("text, expected", [
    ('{"question": "What is a kWh?"}\n', "What is a kWh?"),
    ("question,target\nWhat is a kWh?,2\n", "What is a kWh?"),
    ("What is a kWh?\n", "What is a kWh?"),
], ids=["jsonl", "csv", "text"])
def test_the_format_is_told_by_content_without_an_extension(tmp_path, text, expected):
    assert [r.question for r in read_questions(write(tmp_path, "questions", text)).rows] == [expected]


def test_a_byte_order_mark_and_windows_line_ends_are_read(tmp_path):
    found = read_questions(write(tmp_path, "q.csv", b"\xef\xbb\xbfquestion\r\nWhat is a kWh?\r\n"))
    assert [r.question for r in found.rows] == ["What is a kWh?"]


# -- bad input -------------------------------------------------------------------------

@pytest.mark.parametrize("name, text, words", [
    ("q.csv", "question,colour\nWhat is a kWh?,red\n", "q.csv row 1: unknown column 'colour'"),
    ("q.csv", "library\ndocs\n", "q.csv row 1: no 'question' column"),
    ("q.jsonl", '{"question": "a?"}\n{"question": "b?", "colour": "red"}\n', "q.jsonl row 2: unknown key 'colour'"),
    ("q.txt", b"What is a kWh?\nHow do panels \xff age?\n", "q.txt row 2 is not UTF-8 text"),
    ("q.csv", "", "q.csv holds no question"),
    ("q.txt", "\n  \n", "q.txt holds no question"),
], ids=["unknown-column", "no-question-column", "unknown-key", "not-utf8", "empty-csv", "blank-text"])
def test_an_unusable_file_is_one_line_naming_the_row(tmp_path, name, text, words):
    with pytest.raises(QuestionFileError) as raised:
        read_questions(write(tmp_path, name, text))
    message = str(raised.value)
    assert message.startswith(words) and "\n" not in message


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(QuestionFileError, match="cannot read the question file"):
        read_questions(tmp_path / "nowhere.txt")


def test_empty_rows_are_skipped_each_with_a_note(tmp_path):
    found = read_questions(write(tmp_path, "q.txt", "What is a kWh?\n\n   \nHow do panels age?\n\n\n"))
    assert [r.row for r in found.rows] == [1, 4]
    assert found.notes == ["q.txt row 2: empty, skipped", "q.txt row 3: empty, skipped"]  # not the file's end


def test_an_empty_csv_row_and_a_row_without_question_are_skipped(tmp_path):
    found = read_questions(write(tmp_path, "q.csv", "question,target\nWhat is a kWh?,2\n\n,3\n"))
    assert [r.row for r in found.rows] == [2]
    assert found.notes == ["q.csv row 3: empty, skipped", "q.csv row 4: empty, skipped"]


def test_a_duplicated_question_runs_once_with_a_note(tmp_path):
    found = read_questions(write(tmp_path, "q.txt", "What is a kWh?\nHow do panels age?\nwhat is  a KWH?\n"))
    assert [r.row for r in found.rows] == [1, 2]
    assert found.notes == ["q.txt row 3: the same question as row 1; it runs once"]


def test_the_same_question_with_other_options_is_not_a_duplicate(tmp_path):
    found = read_questions(write(tmp_path, "q.csv", "question,target\nWhat is a kWh?,2\nWhat is a kWh?,5\n"))
    assert [r.target for r in found.rows] == [2, 5] and found.notes == []


@pytest.mark.parametrize("name, text, note", [
    ("q.csv", "question,target\nWhat is a kWh?,two\nHow do panels age?,2\n",
     "q.csv row 2: target must be a whole number of sources, not 'two', skipped"),
    ("q.csv", "question,target\nWhat is a kWh?,0\nHow do panels age?,2\n",
     "q.csv row 2: target must be at least 1, not 0, skipped"),
    ("q.jsonl", '{"question": "What is a kWh?", "providers": 3}\n{"question": "How do panels age?"}\n',
     "q.jsonl row 1: providers must be a comma list of names, not 3, skipped"),
    ("q.jsonl", 'not json\n{"question": "How do panels age?"}\n', "q.jsonl row 1: not a JSON object, skipped"),
    ("q.jsonl", '[1]\n{"question": "How do panels age?"}\n', "q.jsonl row 1: not a JSON object, skipped"),
], ids=["target-not-number", "target-zero", "providers-not-names", "not-json", "not-object"])
def test_a_bad_value_skips_its_row_only(tmp_path, name, text, note):
    found = read_questions(write(tmp_path, name, text))
    assert [r.question for r in found.rows] == ["How do panels age?"]
    assert found.notes == [note]


def test_a_deployments_list_is_read_as_rows(tmp_path):
    found = rows_of_records(["What is a kWh?", {"question": "How do panels age?", "target": 2}, ""])
    assert questions(found) == [(1, "What is a kWh?", None, None, None), (2, "How do panels age?", None, None, 2)]
    assert found.notes == ["questions row 3: empty, skipped"]
    with pytest.raises(QuestionFileError, match="unknown key 'colour'"):
        rows_of_records([{"question": "a?", "colour": "red"}])


# -- stable ids --------------------------------------------------------------------------

def test_the_same_questions_are_the_same_batch_however_spelled(tmp_path):
    plain = read_questions(write(tmp_path, "a.txt", "What is a kWh?\nHow do panels age?\n"))
    spaced = read_questions(write(tmp_path, "b.txt", "  What is  a kWh?\r\nHow do panels age?\n\n"))
    as_json = read_questions(write(tmp_path, "c.jsonl", '{"question": "What is a kWh?"}\n'
                                                        '{"question": "How do panels age?"}\n'))
    assert batch_id_of(plain.rows) == batch_id_of(spaced.rows) == batch_id_of(as_json.rows)


def test_another_question_or_option_is_another_batch():
    rows = [QuestionRow(1, "What is a kWh?"), QuestionRow(2, "How do panels age?")]
    assert batch_id_of(rows) != batch_id_of([rows[0], QuestionRow(2, "How do panels fail?")])
    assert batch_id_of(rows) != batch_id_of([rows[0], QuestionRow(2, "How do panels age?", target=3)])


def test_a_questions_task_id_is_stable_valid_and_its_own():
    row = QuestionRow(7, "What is a kWh?")
    task_id = question_task_id("batch-0123456789ab", row)
    assert task_id == question_task_id("batch-0123456789ab", QuestionRow(7, "What is  a kWh?"))
    assert check_identifier(task_id) == task_id and task_id.startswith("batch-0123456789ab-r7-")
    assert task_id != question_task_id("batch-0123456789ab", QuestionRow(8, "What is a kWh?"))
    assert task_id != question_task_id("batch-0123456789ab", QuestionRow(7, "What is a watt?"))
    assert task_id != question_task_id("other", row)
    longest = question_task_id("b" * 64, QuestionRow(99999, "q"))
    assert check_identifier(longest) == longest


@pytest.mark.parametrize("name, words", [("../etc", "--batch"), ("x" * 65, "at most 64")])
def test_a_bad_batch_name_is_refused(name, words):
    with pytest.raises(ValueError, match=words):
        check_batch_name(name)


# -- control characters -----------------------------------------------------------------

@pytest.mark.parametrize("name, text, row", [
    ("q.txt", "What is a kWh?\nHow do\x00 panels age?\nIs solar cheap?\n", 2),
    ("q.txt", "What is a kWh?\nHow do\x1b[31m panels age?\nIs solar cheap?\n", 2),
    ("q.txt", "What is a kWh?\nHow do\x1c panels age?\nIs solar cheap?\n", 2),  # not a line end either
    ("q.csv", 'question,target\nWhat is a kWh?,\n"How do\x00 panels age?",2\nIs solar cheap?,\n', 3),
    ("q.jsonl", '{"question": "What is a kWh?"}\n{"question": "How do\\u0000 panels age?"}\n'
                '{"question": "Is solar cheap?"}\n', 2),
    ("q.jsonl", '{"question": "What is a kWh?"}\n{"question": "How do\\u009b panels age?"}\n'
                '{"question": "Is solar cheap?"}\n', 2),
], ids=["nul", "escape", "file-separator", "csv-nul", "jsonl-nul", "jsonl-c1"])
def test_a_question_with_a_control_character_is_skipped_in_one_line_and_the_others_run(tmp_path, name, text, row):
    found = read_questions(write(tmp_path, name, text))
    assert [r.question for r in found.rows] == ["What is a kWh?", "Is solar cheap?"]
    assert len(found.notes) == 1
    assert found.notes[0].startswith(f"{name} row {row}: the question holds a control character (U+")
    assert found.notes[0].endswith(", skipped") and "\n" not in found.notes[0]


def test_a_question_on_several_lines_of_a_csv_cell_is_taken(tmp_path):
    found = read_questions(write(tmp_path, "q.csv", 'question\n"How do panels\r\nage in\theat?"\n'))
    assert [" ".join(r.question.split()) for r in found.rows] == ["How do panels age in heat?"]
    assert found.notes == []


def test_a_deployments_question_with_a_control_character_is_skipped(tmp_path):
    found = rows_of_records(["What is a kWh?", "NUL\x00here", {"question": "bell\x07"}])
    assert [r.question for r in found.rows] == ["What is a kWh?"]
    assert [note.split(":")[0] for note in found.notes] == ["questions row 2", "questions row 3"]
