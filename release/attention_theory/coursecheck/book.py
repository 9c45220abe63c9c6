# Generated from the course's judge by the release build: do not edit.
"""The rules of each rule test cell of this notebook, and its own cells."""

from .history import Book
from .rulebook import Rule

BOOK = Book(
    assignment='attention_theory',
    course_cells=frozenset(('45d0f34bd0497aba', '505410ef197bad10', '83a36c6de247b807', '8a7e88c80c12ca8a', '8d2c3ea08570c805', '97e62fa4bc261e72')),
    test_cells=frozenset(('04827af7b58a0d40', '04e6e3ac31d98571', '06fb65330061238c', '2bf4f3a088bf0cba', '3dada0ac93f9ea30', 'a0ad8dd5194ad80d', 'a5865cce344c15e5', 'b4a20e3f1ab0ecf1', 'c301a8dc722f780a', 'de065818e219ebb4', 'faf4c012cb8b9cf1')),
    answer_cells=(frozenset(('query_for_average',)), frozenset(('recovery_matrix',)), frozenset(('query_for_noisy_keys',)), frozenset(('sample_keys', 'simulate_outputs')), frozenset(()), frozenset(('attention',)), frozenset(('is_distribution',)), frozenset(('weights_along',)), frozenset(('pair_distance',)), frozenset(('recovery_errors',)), frozenset(('noisy_key_errors',)), ),
    rules={
        'lab_attention': (Rule(kind='no fused attention', name='attention', part='Lab attention', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='no loops', name='attention', part='Lab attention', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why='')),
        'lab_noise_sweep': (Rule(kind='no loops', name='noisy_key_errors', part='Lab (e)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
        'lab_pair_distance': (Rule(kind='no loops', name='pair_distance', part='Lab (c)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
        'lab_recovery_errors': (Rule(kind='no loops', name='recovery_errors', part='Lab (d)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
        'lab_sharpen_weights': (Rule(kind='no loops', name='weights_along', part='Lab (b)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
    },
    parts={'lab_attention': 'Lab 1', 'lab_noise_sweep': 'Lab 6, (e)', 'lab_pair_distance': 'Lab 4, (c)', 'lab_recovery_errors': 'Lab 5, (d)', 'lab_sharpen_weights': 'Lab 3, (b)'},
    answers={'lab_attention': 5, 'lab_noise_sweep': 10, 'lab_pair_distance': 8, 'lab_recovery_errors': 9, 'lab_sharpen_weights': 7},
)
