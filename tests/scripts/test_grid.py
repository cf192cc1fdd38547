"""``scripts/grid.sh``'s grid reader: run lines, recipes, shared recipe files and their errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts.grid_reader import grid_runs, read_grid


def _grid(folder: Path, text: str, **recipe_files: str) -> Path:
    """Writes g.grid holding TEXT and each NAME.recipes of RECIPE_FILES beside it."""
    for name, recipes in recipe_files.items():
        (folder / f"{name}.recipes").write_text(recipes)
    grid = folder / "g.grid"
    grid.write_text(text)
    return grid


def test_recipes_expand_in_place_and_an_included_file_defines_them(tmp_path):
    grid = _grid(tmp_path, "# runs\n@include shared.recipes\n@small  model.d_model=8\n"
                 "a  configs/a.yaml  @small task.tasks=1 @opt  # a comment\n"
                 "b  configs/b.yaml\n", shared="# shared\n@opt  train.lr=0.5 train.betas=[0.9,0.99]\n")
    assert grid_runs(grid) == [
        ("a", "configs/a.yaml", ["model.d_model=8", "task.tasks=1", "train.lr=0.5", "train.betas=[0.9,0.99]"]),
        ("b", "configs/b.yaml", []),
    ]


def test_a_recipe_may_cite_recipes_above_it_expanded_where_it_is_defined(tmp_path):
    grid = _grid(tmp_path, "@include shared.recipes\n@small  model.d_model=8\n@both  @small @opt model.act=true\n"
                 "a  configs/a.yaml  @both train.seed=1\n@small  model.d_model=16  # defined twice: an error\n",
                 shared="@opt  train.lr=0.5\n")
    result = read_grid(grid)  # a recipe stays defined once, whether others cite it or not
    assert result.returncode == 2 and f"{grid}:5: recipe '@small' is already defined at {grid}:2" in result.stderr
    grid.write_text(grid.read_text().replace("@small  model.d_model=16  # defined twice: an error", "@other  @both"))
    assert grid_runs(grid) == [
        ("a", "configs/a.yaml", ["model.d_model=8", "train.lr=0.5", "model.act=true", "train.seed=1"])]


# (case, the grid, its recipe files, the error; {grid} and {shared} stand for the two files' paths)
ERRORS = [
    ("recipe used before its include", "a  configs/a.yaml  @opt\n@include shared.recipes\n",
     {"shared": "@opt  train.lr=0.5\n"}, "{grid}:1: recipe '@opt' is not defined above"),
    ("recipe defined twice", "@include shared.recipes\n@opt  train.lr=0.1\na  configs/a.yaml  @opt\n",
     {"shared": "\n@opt  train.lr=0.5\n"}, "{grid}:2: recipe '@opt' is already defined at {shared}:2"),
    ("run line in a recipes file", "@include shared.recipes\nb  configs/b.yaml  @opt\n",
     {"shared": "@opt  train.lr=0.5\na  configs/a.yaml\n"}, "{shared}:2: a recipes file holds only"),
    ("nested include", "@include shared.recipes\na  configs/a.yaml\n",
     {"shared": "@include other.recipes\n", "other": "@opt  train.lr=0.5\n"},
     "{shared}:1: an included recipes file cannot include another"),
    ("file included twice", "@include shared.recipes\n@include shared.recipes\na  configs/a.yaml\n",
     {"shared": "@opt  train.lr=0.5\n"}, "{grid}:2: in the file it includes"),
    ("missing include", "# runs\n@include no-such.recipes\na  configs/a.yaml\n", {}, "{grid}:2: expected '@include FILE'"),
    ("recipe citing one defined below", "@a  @b train.lr=0.1\n@b  train.seed=1\nx  configs/x.yaml  @a\n", {},
     "{grid}:1: recipe '@b' is not defined above"),
    ("recipe citing itself", "@a  @a train.lr=0.1\nx  configs/x.yaml  @a\n", {}, "{grid}:1: recipe '@a' is not defined above"),
    ("recipe in a recipes file citing one the grid defines after it", "@include shared.recipes\n@opt  train.lr=0.5\n",
     {"shared": "@both  @opt model.act=true\n"}, "{shared}:1: recipe '@opt' is not defined above"),
    ("run line without its config", "a  configs/a.yaml\nb\n", {}, "{grid}:2: expected 'NAME CONFIG"),
]


@pytest.mark.parametrize(("text", "recipe_files", "message"), [case[1:] for case in ERRORS], ids=[case[0] for case in ERRORS])
def test_a_bad_grid_is_an_error_naming_the_file_and_line(tmp_path, text, recipe_files, message):
    grid = _grid(tmp_path, text, **recipe_files)
    result = read_grid(grid)
    assert result.returncode == 2, result
    assert message.format(grid=grid, shared=tmp_path / "shared.recipes") in result.stderr


def test_an_include_is_found_beside_the_grid_from_any_folder_and_last_lines_need_no_newline(tmp_path):
    (tmp_path / "sub").mkdir()
    _grid(tmp_path / "sub", "@include shared.recipes\na  configs/a.yaml  @opt", shared="@opt  train.lr=0.5")
    result = read_grid(Path("sub/g.grid"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "a\tconfigs/a.yaml\ttrain.lr=0.5\n"
