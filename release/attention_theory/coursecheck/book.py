# Generated from the course's judge by the release build: do not edit.
"""The rules of each rule test cell of this notebook, and its own cells."""

from .history import Book
from .rulebook import Rule

BOOK = Book(
    assignment='attention_theory',
    course_cells=frozenset(('45d0f34bd0497aba', '505410ef197bad10', '83a36c6de247b807', '8a7e88c80c12ca8a', '8d2c3ea08570c805', '97e62fa4bc261e72')),
    test_cells=frozenset(('04e6e3ac31d98571', '06fb65330061238c', '3dada0ac93f9ea30', '5bab9c28979610ac', '8917172978b09935', 'a0ad8dd5194ad80d', 'a5865cce344c15e5', 'a8ad488c00d74ead', 'd7c2dac0692b799d', 'e88860368d90c342', 'faf4c012cb8b9cf1')),
    answer_cells=(frozenset(('query_for_average',)), frozenset(('recovery_matrix',)), frozenset(('query_for_noisy_keys',)), frozenset(('sample_keys', 'simulate_outputs')), frozenset(('direction',)), frozenset(('attention',)), frozenset(('is_distribution',)), frozenset(('weights_along',)), frozenset(('pair_distance',)), frozenset(('recovery_errors',)), frozenset(('noisy_key_errors',)), ),
    rules={
        'lab_attention': (Rule(kind='no fused attention', name='attention', part='Lab attention', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='no loops', name='attention', part='Lab attention', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why='')),
        'lab_noise_sweep': (Rule(kind='no loops', name='noisy_key_errors', part='Lab (e)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
        'lab_pair_distance': (Rule(kind='no loops', name='pair_distance', part='Lab (c)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
        'lab_recovery_errors': (Rule(kind='no loops', name='recovery_errors', part='Lab (d)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
        'lab_sharpen_weights': (Rule(kind='no loops', name='weights_along', part='Lab (b)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
    },
    parts={'c_query_for_average': 'Q1(c)', 'd_recovery_matrix': 'Q1(d)', 'e_query_for_noisy_keys': 'Q1(e)', 'f_sample_keys': 'Q1(f)', 'f_simulation_statistics': 'Q1(f)', 'lab_attention': 'Lab 1', 'lab_noise_sweep': 'Lab 6, (e)', 'lab_pair_distance': 'Lab 4, (c)', 'lab_recovery_errors': 'Lab 5, (d)', 'lab_sharpen_weights': 'Lab 3, (b)', 'lab_weights_distribution': 'Lab 2'},
    answers={'c_query_for_average': 0, 'd_recovery_matrix': 1, 'e_query_for_noisy_keys': 2, 'f_sample_keys': 3, 'f_simulation_statistics': 3, 'lab_attention': 5, 'lab_noise_sweep': 10, 'lab_pair_distance': 8, 'lab_recovery_errors': 9, 'lab_sharpen_weights': 7, 'lab_weights_distribution': 6},
)
