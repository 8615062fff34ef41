CREATE TABLE acct (id INT PRIMARY KEY, email TEXT UNIQUE, region VARCHAR(10) NOT NULL, amount NUMERIC(10,2) DEFAULT 0);
CREATE INDEX acct_region ON acct (region, amount DESC);
CREATE VIEW v AS SELECT id, email FROM acct;
\dt
\d acct
\d+ acct
\di
\dv
\d v
\d acct_region
\dn
