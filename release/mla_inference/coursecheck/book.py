# Generated from the course's judge by the release build: do not edit.
"""The rules of each rule test cell of this notebook, and its own cells."""

from .history import Book
from .rulebook import Rule

BOOK = Book(
    assignment='mla_inference',
    course_cells=frozenset(('94a5fb6f41955259', '97e62fa4bc261e72', '98322e0e0f134c48', 'c1408d317a994091')),
    test_cells=frozenset(('0eb83b4ce140649d', '3a24c264f6c659d5', '3a30b9b8649d30bb', '6cf6bbbc1c3e9ac5', 'ab639a84ec634077', 'b9c66041542a8329', 'c93e5d1eb69281d7', 'cc58d73ec33f5d1e', 'd7974a1df0cf64aa', 'e45648fd28d80095', 'efd9ed4455658cbb')),
    answer_cells=(frozenset(('rope',)), frozenset(('merged_score_matrix',)), frozenset(('MLAAttention',)), frozenset(('latent_query',)), frozenset(('decode_step',)), frozenset(('cache_elements',)), frozenset(()), ),
    rules={
        'p1_rope_rules': (Rule(kind='no loops', name='rope', part='Part 1(a)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
        'p2_mla_forward': (Rule(kind='no fused attention', name='MLAAttention', part='Part 2', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
        'p2_mla_rules': (Rule(kind='no fused attention', name='MLAAttention', part='Part 2', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='no loops', name='MLAAttention', part='Part 2', skip=(), skip_reached_from=('rope',), outputs=(), size_params=None, word='', expected='', why='')),
        'p3_decode_rules': (Rule(kind='uses', name='decode_step', part='Part 3(b)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='latent_query', expected='get its queries from latent_query(model, x_t, t)', why=''), Rule(kind='no fused attention', name='decode_step', part='Part 3(b)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='no loops', name='decode_step', part='Part 3(b)', skip=('MLAAttention',), skip_reached_from=('rope',), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='no fused attention', name='latent_query', part='Part 3(b)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='no loops', name='latent_query', part='Part 3(b)', skip=('MLAAttention',), skip_reached_from=('rope',), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='never names', name='decode_step', part='Part 3(b)', skip=('MLAAttention',), skip_reached_from=('rope', 'latent_query'), outputs=(), size_params=None, word='W_UK', expected='W_UK only inside latent_query, absorbed into the query', why='rebuilding keys from the cached latents: with W_UK absorbed into the query the keys are never formed')),
    },
    parts={'p1_rope_rules': 'Part 1(a)', 'p2_mla_forward': 'Part 2', 'p2_mla_rules': 'Part 2', 'p3_decode_rules': 'Part 3(b)'},
    answers={'p1_rope_rules': 0, 'p2_mla_forward': 2, 'p2_mla_rules': 2, 'p3_decode_rules': 4},
)
