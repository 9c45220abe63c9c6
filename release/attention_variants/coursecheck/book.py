# Generated from the course's judge by the release build: do not edit.
"""The rules of each rule test cell of this notebook, and its own cells."""

from .history import Book
from .rulebook import Rule

BOOK = Book(
    assignment='attention_variants',
    course_cells=frozenset(('04c11eab01503b20', '1bd8bfa43ac4bc89', '556a624b4ac10ad0', '685965d43a7c1b3e', '7ba5d230e19f2806', '97e62fa4bc261e72')),
    test_cells=frozenset(('08186c9329926b4c', '0878d1a94987e17d', '0a1bd8114808f229', '0fb5d1c5bbbf8841', '207bcd8d33345345', '336dcdaf2487393c', '39878900e855d2b1', '432d7014800748eb', '463cbb72c0aafada', '4ab16d6870f0688a', '59763b194b39f56c', '610ba49b1211342d', '62f8c6539cb2ce8e', '7b64a512e8bcbc3e', '7f4c94053a2d03f0', '87125cc50d0157b7', '9623adec4740efc8', '9cdc0536ededeaf1', 'd2deea8a699678ce', 'd471f455e23b5f23', 'e11ac8c82c3599ce', 'effbc6a88a1ffcaa', 'f159d721c2327b88')),
    answer_cells=(frozenset(('head_shapes',)), frozenset(('stacked_shapes',)), frozenset(('key_vector', 'query_vector', 'value_vector')), frozenset(('softmax_argument',)), frozenset(('output_shapes',)), frozenset(('MyMHA',)), frozenset(('tilde_rank',)), frozenset(('MyGQA',)), frozenset(('mha_as_gqa',)), frozenset(('GQA_2_MLA',)), frozenset(()), frozenset(('reduced_matrices',)), frozenset(()), frozenset(('kv_cache_per_position',)), ),
    rules={
        'p10_gqa_2_mla_rules_test': (Rule(kind='numpy only', name='GQA_2_MLA', part='Part 10', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='no loops', name='GQA_2_MLA', part='Part 10', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why='')),
        'p13_reduced_matrices_rules_test': (Rule(kind='no loops', name='reduced_matrices', part='Part 13', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='one statement per output', name='reduced_matrices', part='Part 13', skip=(), skip_reached_from=(), outputs=('W_K_MLA_hat', 'W_V_MLA_hat', 'W_Q_MLA_hat', 'W_O_MLA_hat'), size_params=('H',), word='', expected='', why='')),
        'p5_mha_no_loops_test': (Rule(kind='no loops', name='MyMHA', part='Part 5', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
        'p5_mha_values_test': (Rule(kind='no fused attention', name='MyMHA', part='Part 5', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
        'p7_gqa_interleaved_heads_test': (Rule(kind='no fused attention', name='MyGQA', part='Part 7', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
        'p7_gqa_no_loops_test': (Rule(kind='no loops', name='MyGQA', part='Part 7', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
    },
    parts={'p10_gqa_2_mla_rules_test': 'Part 10', 'p13_reduced_matrices_rules_test': 'Part 13', 'p5_mha_no_loops_test': 'Part 5', 'p5_mha_values_test': 'Part 5', 'p7_gqa_interleaved_heads_test': 'Part 7', 'p7_gqa_no_loops_test': 'Part 7'},
    answers={'p10_gqa_2_mla_rules_test': 9, 'p13_reduced_matrices_rules_test': 11, 'p5_mha_no_loops_test': 5, 'p5_mha_values_test': 5, 'p7_gqa_interleaved_heads_test': 7, 'p7_gqa_no_loops_test': 7},
)
