"""Tests of the mni-brain-3d builder and of check_labeled_set.py's nnU-Net checks, on a tiny set built by the
real pipeline from a small synthetic template (seconds, no download).

    .venv-datasets/bin/python -m unittest discover -s Datasets -p 'test_*.py'
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
import unittest
from pathlib import Path
from unittest import mock

import nibabel
import numpy as np

import build_mni_brain_3d as builder
import check_labeled_set as checker
from datasetlib import volume3d
from datasetlib.template import Template

#: sklearn 1.7.2's KFold(n_splits=5, shuffle=True, random_state=12345) held-out ids (nnU-Net v2's default split),
#: printed by `[[keys[i] for i in te] for tr, te in KFold(...).split(sorted(keys))]`.
SKLEARN_VAL_30 = [
    ["mnib3d_004", "mnib3d_009", "mnib3d_013", "mnib3d_016", "mnib3d_019", "mnib3d_027"],
    ["mnib3d_001", "mnib3d_007", "mnib3d_008", "mnib3d_021", "mnib3d_022", "mnib3d_025"],
    ["mnib3d_011", "mnib3d_012", "mnib3d_014", "mnib3d_020", "mnib3d_023", "mnib3d_024"],
    ["mnib3d_015", "mnib3d_017", "mnib3d_018", "mnib3d_026", "mnib3d_028", "mnib3d_030"],
    ["mnib3d_002", "mnib3d_003", "mnib3d_005", "mnib3d_006", "mnib3d_010", "mnib3d_029"]]
SKLEARN_VAL_7 = [["c3", "c6"], ["c0", "c4"], ["c1"], ["c5"], ["c2"]]


def tiny_template() -> Template:
    """A 40 x 44 x 40 mm 'brain': a white-matter ball off-centre (+4 mm along x, so a flipped or shifted label
    map shows) inside a gray-matter ball, T1 214 and 169, 1 mm RAS."""
    shape = (40, 44, 40)
    grid = np.stack(np.meshgrid(*[np.arange(n) - (n - 1) / 2 for n in shape], indexing="ij"))
    radius = np.sqrt((grid ** 2).sum(axis=0))
    wm = np.clip(11.0 - np.sqrt(((grid - np.array([4.0, 0, 0])[:, None, None, None]) ** 2).sum(axis=0)), 0, 1)
    wm = wm.astype(np.float32)
    gm = (np.clip(17.0 - radius, 0, 1) - wm).astype(np.float32)
    t1 = (214.0 * wm + 169.0 * gm).astype(np.float32)
    affine = np.eye(4)
    affine[:3, 3] = (-20.0, -24.0, -10.0)
    return Template(t1=t1, gm=gm, wm=wm, affine=affine, provenance={"template": "synthetic test ball"})


def build_tiny(out: Path) -> dict:
    with mock.patch.object(builder, "load_template", lambda wheels: tiny_template()), \
            mock.patch.object(builder, "TRAINING_CASES", 5), mock.patch.object(builder, "TEST_CASES", 2), \
            mock.patch.object(volume3d, "FIELD_OF_VIEW_MM", (40.0, 44.0, 42.0)), \
            contextlib.redirect_stdout(io.StringIO()):
        return builder.build(out, seed=7, wheels=out.parent)


def check(folder: Path) -> tuple[bool, str]:
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        try:
            ok = checker.check_nnunet_set(folder, skip_bad=False, quiet=False)
        except checker.SetError as error:
            return False, str(error)
    return ok, errors.getvalue()


class NNUNetSplitTests(unittest.TestCase):
    def test_splits_match_sklearn_kfold_as_nnunet_calls_it(self):
        ids = [f"mnib3d_{i:03d}" for i in range(30, 0, -1)]               # unsorted on purpose
        folds = builder.nnunet_splits(ids)
        self.assertEqual([f["val"] for f in folds], SKLEARN_VAL_30)
        for fold in folds:
            self.assertEqual(sorted(fold["train"] + fold["val"]), sorted(ids))
        self.assertEqual([f["val"] for f in builder.nnunet_splits([f"c{i}" for i in range(7)])], SKLEARN_VAL_7)


class ClassStatisticsTests(unittest.TestCase):
    def test_thickness_components_and_volume_of_known_shapes(self):
        labels = np.zeros((30, 30, 3), dtype=np.uint8)
        labels[5:25, 10, :] = 1                    # a one-pixel line in each slice: 1 pixel thick
        labels[5:25, 15:20, 1] = 2                 # a five-pixel bar in the middle slice: 5 pixels thick
        stats = volume3d.class_statistics(labels, (0.5, 0.5, 3.0), ["background", "gm", "wm"])
        self.assertEqual(stats["gm"]["voxels"], 60)
        self.assertEqual(stats["gm"]["components"], 1)
        self.assertAlmostEqual(stats["gm"]["thickness_pixels_median"], 1.0)
        self.assertAlmostEqual(stats["wm"]["thickness_pixels_median"], 5.0)
        self.assertAlmostEqual(stats["wm"]["thickness_mm_median"], 2.5)
        self.assertAlmostEqual(stats["wm"]["volume_ml"], round(100 * 0.75 / 1000, 2))


class BuiltSetTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = Path(tempfile.mkdtemp(prefix="mni3d-test-"))
        cls.stats = build_tiny(cls.root / "tiny")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root)

    def copy(self, name: str) -> Path:
        target = self.root / name
        shutil.copytree(self.root / "tiny", target)
        return target

    def test_layout_geometry_and_determinism(self):
        folder = self.root / "tiny"
        dataset = json.loads((folder / "dataset.json").read_text())
        self.assertEqual(dataset["channel_names"], {"0": "T1"})
        self.assertEqual(dataset["labels"], {"background": 0, "gray matter": 1, "white matter": 2})
        self.assertEqual(dataset["numTraining"], 5)
        self.assertEqual(dataset["builder"]["seed"], 7)
        self.assertEqual(len(list((folder / "imagesTs").glob("*_0000.nii.gz"))), 2)
        self.assertEqual(len(json.loads((folder / "splits_final.json").read_text())), 5)
        image = nibabel.load(folder / "imagesTr" / "mnib3d_001_0000.nii.gz")
        label = nibabel.load(folder / "labelsTr" / "mnib3d_001.nii.gz")
        self.assertEqual(int(image.header["sform_code"]), 1)
        self.assertEqual(int(image.header["qform_code"]), 1)
        np.testing.assert_allclose(image.header.get_qform(), image.header.get_sform(), atol=1e-5)
        np.testing.assert_array_equal(image.affine, label.affine)
        self.assertEqual(image.get_data_dtype(), np.int16)
        self.assertEqual(label.get_data_dtype(), np.uint8)
        values = np.unique(np.asanyarray(label.dataobj))
        self.assertEqual(values.tolist(), [0, 1, 2])
        spacing = image.header.get_zooms()
        self.assertGreater(spacing[2], 2.5 * spacing[0])               # anisotropic: thick slices
        self.assertEqual(build_tiny(self.root / "again")["sha256"], self.stats["sha256"])

    def test_labels_follow_the_image_through_the_deformation(self):
        """T1 contrast: white matter brighter than gray matter brighter than background, in every case (fails if
        image and labels were sampled through different maps or grids)."""
        folder = self.root / "tiny"
        for label_path in sorted(folder.glob("labels*/*.nii.gz")):
            case = label_path.name[:-len(".nii.gz")]
            images = "imagesTr" if label_path.parent.name == "labelsTr" else "imagesTs"
            image = np.asanyarray(nibabel.load(folder / images / f"{case}_0000.nii.gz").dataobj)
            labels = np.asanyarray(nibabel.load(label_path).dataobj)
            medians = [np.median(image[labels == value]) for value in (0, 1, 2)]
            self.assertLess(medians[0], medians[1], case)
            self.assertLess(medians[1], medians[2], case)
            # the tissue boundary: few white-matter voxels darker than the gray-matter median
            self.assertLess(np.mean(image[labels == 2] < medians[1]), 0.2, case)

    def test_checker_accepts_the_built_set(self):
        ok, errors = check(self.root / "tiny")
        self.assertTrue(ok, errors)
        self.assertTrue(checker.is_nnunet(self.root / "tiny"))

    def test_checker_names_undeclared_label_value(self):
        folder = self.copy("bad-value")
        path = folder / "labelsTr" / "mnib3d_002.nii.gz"
        image = nibabel.load(path)
        data = np.asanyarray(image.dataobj).copy()
        data[0, 0, 0] = 3
        builder.write_nifti(path, data, image.affine, "bad")
        ok, errors = check(folder)
        self.assertFalse(ok)
        self.assertIn("mnib3d_002: label outside classes: value(s) [3]", errors)

    def test_checker_names_geometry_mismatch(self):
        folder = self.copy("bad-origin")
        path = folder / "labelsTr" / "mnib3d_003.nii.gz"
        image = nibabel.load(path)
        affine = image.affine.copy()
        affine[0, 3] += 0.01
        builder.write_nifti(path, np.asanyarray(image.dataobj), affine, "shifted")
        ok, errors = check(folder)
        self.assertFalse(ok)
        self.assertIn("mnib3d_003: geometry mismatch: imagesTr/mnib3d_003_0000.nii.gz origin", errors)

    def test_checker_names_unpaired_case_and_wrong_count(self):
        folder = self.copy("unpaired")
        (folder / "labelsTr" / "mnib3d_004.nii.gz").unlink()
        (folder / "labelsTs" / "mnib3d_007.nii.gz").unlink()
        ok, errors = check(folder)
        self.assertFalse(ok)
        self.assertIn("mnib3d_004: unpaired image", errors)
        self.assertIn("mnib3d_007: unpaired image", errors)
        dataset = json.loads((folder / "dataset.json").read_text())
        dataset["numTraining"] = 6
        (folder / "dataset.json").write_text(json.dumps(dataset))
        self.assertIn("numTraining is 6, imagesTr holds 5 cases", check(folder)[1])

    def test_checker_names_bad_splits(self):
        folder = self.copy("bad-splits")
        splits = json.loads((folder / "splits_final.json").read_text())
        splits[1]["val"].append("mnib3d_006")                             # a test case
        splits[2]["train"].append(splits[2]["val"][0])
        (folder / "splits_final.json").write_text(json.dumps(splits))
        ok, errors = check(folder)
        self.assertFalse(ok)
        self.assertIn("fold 1 lists ['mnib3d_006'] which are not training cases", errors)
        self.assertIn(f"fold 2 has ['{splits[2]['val'][0]}'] in both train and val", errors)


if __name__ == "__main__":
    unittest.main()
