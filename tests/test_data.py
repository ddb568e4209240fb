"""The two-moons data, and the certificate that no straight line separates its classes."""

import numpy as np

from bnvg.experiment.data import (
    TwoMoons,
    convex_hull,
    inside_hull,
    points_inside_the_other_class,
    two_moons,
)


def test_the_convex_hull_is_its_corners_counter_clockwise_and_its_inside_is_strict():
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5], [0.5, 0]])
    hull = convex_hull(square)
    assert hull.tolist() == [[0, 0], [1, 0], [1, 1], [0, 1]]
    probes = np.array([[0.5, 0.5], [2, 2], [1, 0.5], [0.99, 0.01]])
    assert inside_hull(hull, probes).tolist() == [True, False, False, True]


def labelled(points, labels):
    return TwoMoons(np.asarray(points, np.float32), np.asarray(labels, np.float32), len(labels))


def test_separable_classes_have_no_point_inside_the_others_hull():
    """Left of x = 0.5 against right of it: a line separates them, and no certificate says
    otherwise."""
    left = [[0, 0], [0, 1], [0.4, 0.5], [0.1, 0.2]]
    right = [[1, 0], [1, 1], [0.6, 0.5], [0.9, 0.8]]
    assert points_inside_the_other_class(labelled(left + right, [0] * 4 + [1] * 4)) == (0, 0)


def test_a_point_inside_the_other_class_hull_certifies_that_no_line_separates_them():
    ring = [[0, 0], [2, 0], [2, 2], [0, 2]]
    centre = [[1, 1]]
    assert points_inside_the_other_class(labelled(ring + centre, [1] * 4 + [0])) == (1, 0)


def test_the_workshops_moons_interleave():
    upper_in_lower, lower_in_upper = points_inside_the_other_class(two_moons())
    assert upper_in_lower > 0 and lower_in_upper > 0
