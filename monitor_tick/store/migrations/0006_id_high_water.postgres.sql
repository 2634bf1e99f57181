-- Ids are never given twice (a removed monitor's badge URL and metrics series stay its own): the largest id each table has handed out so far.
CREATE TABLE id_high_water (
    table_name TEXT    PRIMARY KEY,
    last_id    BIGINT NOT NULL
);
INSERT INTO id_high_water (table_name, last_id)
SELECT 'monitors', max(id) FROM monitors HAVING max(id) IS NOT NULL
UNION ALL SELECT 'owners', max(id) FROM owners HAVING max(id) IS NOT NULL
UNION ALL SELECT 'plans', max(id) FROM plans HAVING max(id) IS NOT NULL
UNION ALL SELECT 'maintenance_windows', max(id) FROM maintenance_windows HAVING max(id) IS NOT NULL
UNION ALL SELECT 'channels', max(id) FROM channels HAVING max(id) IS NOT NULL;
