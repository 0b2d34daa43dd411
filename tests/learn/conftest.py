import pytest

pytest.register_assert_rewrite("tests.learn.students")
