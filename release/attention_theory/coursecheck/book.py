# Generated from the course's judge by the release build: do not edit.
"""The rules of each rule test cell of this notebook, and its own cells."""

from .history import Book
from .rulebook import Rule

BOOK = Book(
    assignment='attention_theory',
    course_cells=frozenset(('45d0f34bd0497aba', '505410ef197bad10', '83a36c6de247b807', '8a7e88c80c12ca8a', '8d2c3ea08570c805', '97e62fa4bc261e72')),
    test_cells=frozenset(('3879f7c21512741f', '41a0c4d7c3c493b8', '4d59826fc32ace83', '6558a851943c7558', '7ccd8fa6ad227b5e', '95c34b5dc8d45dbe', 'a1ffdf67db5b8166', 'b60b806a8ea35ad3', 'be31ee27d21b752e', 'daeea306beacb3ac', 'ffc4c01a78787f73')),
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
