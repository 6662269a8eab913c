--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: status; Type: TYPE; Schema: public; Owner: pmdb
--

CREATE TYPE public.status AS ENUM (
    'new',
    'paid',
    'shipped'
);


ALTER TYPE public.status OWNER TO pmdb;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: orders; Type: TABLE; Schema: public; Owner: pmdb
--

CREATE TABLE public.orders (
    id bigint NOT NULL,
    customer_id integer NOT NULL,
    total numeric(12,2) NOT NULL,
    state public.status DEFAULT 'new'::public.status NOT NULL,
    note text,
    placed date,
    CONSTRAINT orders_total_check CHECK ((total >= (0)::numeric))
);


ALTER TABLE public.orders OWNER TO pmdb;

--
-- Name: big_orders; Type: VIEW; Schema: public; Owner: pmdb
--

CREATE VIEW public.big_orders AS
 SELECT orders.id,
    orders.total
   FROM public.orders
  WHERE (orders.total > (100)::numeric);


ALTER TABLE public.big_orders OWNER TO pmdb;

--
-- Name: customers; Type: TABLE; Schema: public; Owner: pmdb
--

CREATE TABLE public.customers (
    id integer NOT NULL,
    email character varying(200) NOT NULL,
    name text,
    created timestamp with time zone DEFAULT now()
);


ALTER TABLE public.customers OWNER TO pmdb;

--
-- Name: TABLE customers; Type: COMMENT; Schema: public; Owner: pmdb
--

COMMENT ON TABLE public.customers IS 'people who buy';


--
-- Name: customers_id_seq; Type: SEQUENCE; Schema: public; Owner: pmdb
--

CREATE SEQUENCE public.customers_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


ALTER TABLE public.customers_id_seq OWNER TO pmdb;

--
-- Name: customers_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: pmdb
--

ALTER SEQUENCE public.customers_id_seq OWNED BY public.customers.id;


--
-- Name: invoice_no; Type: SEQUENCE; Schema: public; Owner: pmdb
--

CREATE SEQUENCE public.invoice_no
    START WITH 1000
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


ALTER TABLE public.invoice_no OWNER TO pmdb;

--
-- Name: items; Type: TABLE; Schema: public; Owner: pmdb
--

CREATE TABLE public.items (
    order_id bigint NOT NULL,
    line integer NOT NULL,
    sku text,
    qty integer DEFAULT 1
);


ALTER TABLE public.items OWNER TO pmdb;

--
-- Name: orders_id_seq; Type: SEQUENCE; Schema: public; Owner: pmdb
--

CREATE SEQUENCE public.orders_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


ALTER TABLE public.orders_id_seq OWNER TO pmdb;

--
-- Name: orders_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: pmdb
--

ALTER SEQUENCE public.orders_id_seq OWNED BY public.orders.id;


--
-- Name: customers id; Type: DEFAULT; Schema: public; Owner: pmdb
--

ALTER TABLE ONLY public.customers ALTER COLUMN id SET DEFAULT nextval('public.customers_id_seq'::regclass);


--
-- Name: orders id; Type: DEFAULT; Schema: public; Owner: pmdb
--

ALTER TABLE ONLY public.orders ALTER COLUMN id SET DEFAULT nextval('public.orders_id_seq'::regclass);


--
-- Data for Name: customers; Type: TABLE DATA; Schema: public; Owner: pmdb
--

COPY public.customers (id, email, name, created) FROM stdin;
1	c1@x.org	name 1	2026-12-06 19:38:13.957355+00
2	c2@x.org	name 2	2026-12-06 19:38:13.957355+00
3	c3@x.org	name 3	2026-12-06 19:38:13.957355+00
4	c4@x.org	name 4	2026-12-06 19:38:13.957355+00
5	c5@x.org	name 5	2026-12-06 19:38:13.957355+00
6	c6@x.org	name 6	2026-12-06 19:38:13.957355+00
7	c7@x.org	name 7	2026-12-06 19:38:13.957355+00
8	c8@x.org	name 8	2026-12-06 19:38:13.957355+00
9	c9@x.org	name 9	2026-12-06 19:38:13.957355+00
10	c10@x.org	name 10	2026-12-06 19:38:13.957355+00
11	c11@x.org	name 11	2026-12-06 19:38:13.957355+00
12	c12@x.org	name 12	2026-12-06 19:38:13.957355+00
13	c13@x.org	name 13	2026-12-06 19:38:13.957355+00
14	c14@x.org	name 14	2026-12-06 19:38:13.957355+00
15	c15@x.org	name 15	2026-12-06 19:38:13.957355+00
16	c16@x.org	name 16	2026-12-06 19:38:13.957355+00
17	c17@x.org	name 17	2026-12-06 19:38:13.957355+00
18	c18@x.org	name 18	2026-12-06 19:38:13.957355+00
19	c19@x.org	name 19	2026-12-06 19:38:13.957355+00
20	c20@x.org	name 20	2026-12-06 19:38:13.957355+00
21	c21@x.org	name 21	2026-12-06 19:38:13.957355+00
22	c22@x.org	name 22	2026-12-06 19:38:13.957355+00
23	c23@x.org	name 23	2026-12-06 19:38:13.957355+00
24	c24@x.org	name 24	2026-12-06 19:38:13.957355+00
25	c25@x.org	name 25	2026-12-06 19:38:13.957355+00
26	c26@x.org	name 26	2026-12-06 19:38:13.957355+00
27	c27@x.org	name 27	2026-12-06 19:38:13.957355+00
28	c28@x.org	name 28	2026-12-06 19:38:13.957355+00
29	c29@x.org	name 29	2026-12-06 19:38:13.957355+00
30	c30@x.org	name 30	2026-12-06 19:38:13.957355+00
31	c31@x.org	name 31	2026-12-06 19:38:13.957355+00
32	c32@x.org	name 32	2026-12-06 19:38:13.957355+00
33	c33@x.org	name 33	2026-12-06 19:38:13.957355+00
34	c34@x.org	name 34	2026-12-06 19:38:13.957355+00
35	c35@x.org	name 35	2026-12-06 19:38:13.957355+00
36	c36@x.org	name 36	2026-12-06 19:38:13.957355+00
37	c37@x.org	name 37	2026-12-06 19:38:13.957355+00
38	c38@x.org	name 38	2026-12-06 19:38:13.957355+00
39	c39@x.org	name 39	2026-12-06 19:38:13.957355+00
40	c40@x.org	name 40	2026-12-06 19:38:13.957355+00
41	c41@x.org	name 41	2026-12-06 19:38:13.957355+00
42	c42@x.org	name 42	2026-12-06 19:38:13.957355+00
43	c43@x.org	name 43	2026-12-06 19:38:13.957355+00
44	c44@x.org	name 44	2026-12-06 19:38:13.957355+00
45	c45@x.org	name 45	2026-12-06 19:38:13.957355+00
46	c46@x.org	name 46	2026-12-06 19:38:13.957355+00
47	c47@x.org	name 47	2026-12-06 19:38:13.957355+00
48	c48@x.org	name 48	2026-12-06 19:38:13.957355+00
49	c49@x.org	name 49	2026-12-06 19:38:13.957355+00
50	c50@x.org	name 50	2026-12-06 19:38:13.957355+00
\.


--
-- Data for Name: items; Type: TABLE DATA; Schema: public; Owner: pmdb
--

COPY public.items (order_id, line, sku, qty) FROM stdin;
1	1	sku-1	1
2	1	sku-1	1
3	1	sku-1	1
4	1	sku-1	1
5	1	sku-1	1
6	1	sku-1	1
7	1	sku-1	1
8	1	sku-1	1
9	1	sku-1	1
10	1	sku-1	1
11	1	sku-1	1
12	1	sku-1	1
13	1	sku-1	1
14	1	sku-1	1
15	1	sku-1	1
16	1	sku-1	1
17	1	sku-1	1
18	1	sku-1	1
19	1	sku-1	1
20	1	sku-1	1
21	1	sku-1	1
22	1	sku-1	1
23	1	sku-1	1
24	1	sku-1	1
25	1	sku-1	1
26	1	sku-1	1
27	1	sku-1	1
28	1	sku-1	1
29	1	sku-1	1
30	1	sku-1	1
31	1	sku-1	1
32	1	sku-1	1
33	1	sku-1	1
34	1	sku-1	1
35	1	sku-1	1
36	1	sku-1	1
37	1	sku-1	1
38	1	sku-1	1
39	1	sku-1	1
40	1	sku-1	1
41	1	sku-1	1
42	1	sku-1	1
43	1	sku-1	1
44	1	sku-1	1
45	1	sku-1	1
46	1	sku-1	1
47	1	sku-1	1
48	1	sku-1	1
49	1	sku-1	1
50	1	sku-1	1
51	1	sku-1	1
52	1	sku-1	1
53	1	sku-1	1
54	1	sku-1	1
55	1	sku-1	1
56	1	sku-1	1
57	1	sku-1	1
58	1	sku-1	1
59	1	sku-1	1
60	1	sku-1	1
61	1	sku-1	1
62	1	sku-1	1
63	1	sku-1	1
64	1	sku-1	1
65	1	sku-1	1
66	1	sku-1	1
67	1	sku-1	1
68	1	sku-1	1
69	1	sku-1	1
70	1	sku-1	1
71	1	sku-1	1
72	1	sku-1	1
73	1	sku-1	1
74	1	sku-1	1
75	1	sku-1	1
76	1	sku-1	1
77	1	sku-1	1
78	1	sku-1	1
79	1	sku-1	1
80	1	sku-1	1
81	1	sku-1	1
82	1	sku-1	1
83	1	sku-1	1
84	1	sku-1	1
85	1	sku-1	1
86	1	sku-1	1
87	1	sku-1	1
88	1	sku-1	1
89	1	sku-1	1
90	1	sku-1	1
91	1	sku-1	1
92	1	sku-1	1
93	1	sku-1	1
94	1	sku-1	1
95	1	sku-1	1
96	1	sku-1	1
97	1	sku-1	1
98	1	sku-1	1
99	1	sku-1	1
100	1	sku-1	1
101	1	sku-1	1
102	1	sku-1	1
103	1	sku-1	1
104	1	sku-1	1
105	1	sku-1	1
106	1	sku-1	1
107	1	sku-1	1
108	1	sku-1	1
109	1	sku-1	1
110	1	sku-1	1
111	1	sku-1	1
112	1	sku-1	1
113	1	sku-1	1
114	1	sku-1	1
115	1	sku-1	1
116	1	sku-1	1
117	1	sku-1	1
118	1	sku-1	1
119	1	sku-1	1
120	1	sku-1	1
121	1	sku-1	1
122	1	sku-1	1
123	1	sku-1	1
124	1	sku-1	1
125	1	sku-1	1
126	1	sku-1	1
127	1	sku-1	1
128	1	sku-1	1
129	1	sku-1	1
130	1	sku-1	1
131	1	sku-1	1
132	1	sku-1	1
133	1	sku-1	1
134	1	sku-1	1
135	1	sku-1	1
136	1	sku-1	1
137	1	sku-1	1
138	1	sku-1	1
139	1	sku-1	1
140	1	sku-1	1
141	1	sku-1	1
142	1	sku-1	1
143	1	sku-1	1
144	1	sku-1	1
145	1	sku-1	1
146	1	sku-1	1
147	1	sku-1	1
148	1	sku-1	1
149	1	sku-1	1
150	1	sku-1	1
151	1	sku-1	1
152	1	sku-1	1
153	1	sku-1	1
154	1	sku-1	1
155	1	sku-1	1
156	1	sku-1	1
157	1	sku-1	1
158	1	sku-1	1
159	1	sku-1	1
160	1	sku-1	1
161	1	sku-1	1
162	1	sku-1	1
163	1	sku-1	1
164	1	sku-1	1
165	1	sku-1	1
166	1	sku-1	1
167	1	sku-1	1
168	1	sku-1	1
169	1	sku-1	1
170	1	sku-1	1
171	1	sku-1	1
172	1	sku-1	1
173	1	sku-1	1
174	1	sku-1	1
175	1	sku-1	1
176	1	sku-1	1
177	1	sku-1	1
178	1	sku-1	1
179	1	sku-1	1
180	1	sku-1	1
181	1	sku-1	1
182	1	sku-1	1
183	1	sku-1	1
184	1	sku-1	1
185	1	sku-1	1
186	1	sku-1	1
187	1	sku-1	1
188	1	sku-1	1
189	1	sku-1	1
190	1	sku-1	1
191	1	sku-1	1
192	1	sku-1	1
193	1	sku-1	1
194	1	sku-1	1
195	1	sku-1	1
196	1	sku-1	1
197	1	sku-1	1
198	1	sku-1	1
199	1	sku-1	1
200	1	sku-1	1
1	2	sku-2	2
2	2	sku-2	2
3	2	sku-2	2
4	2	sku-2	2
5	2	sku-2	2
6	2	sku-2	2
7	2	sku-2	2
8	2	sku-2	2
9	2	sku-2	2
10	2	sku-2	2
11	2	sku-2	2
12	2	sku-2	2
13	2	sku-2	2
14	2	sku-2	2
15	2	sku-2	2
16	2	sku-2	2
17	2	sku-2	2
18	2	sku-2	2
19	2	sku-2	2
20	2	sku-2	2
21	2	sku-2	2
22	2	sku-2	2
23	2	sku-2	2
24	2	sku-2	2
25	2	sku-2	2
26	2	sku-2	2
27	2	sku-2	2
28	2	sku-2	2
29	2	sku-2	2
30	2	sku-2	2
31	2	sku-2	2
32	2	sku-2	2
33	2	sku-2	2
34	2	sku-2	2
35	2	sku-2	2
36	2	sku-2	2
37	2	sku-2	2
38	2	sku-2	2
39	2	sku-2	2
40	2	sku-2	2
41	2	sku-2	2
42	2	sku-2	2
43	2	sku-2	2
44	2	sku-2	2
45	2	sku-2	2
46	2	sku-2	2
47	2	sku-2	2
48	2	sku-2	2
49	2	sku-2	2
50	2	sku-2	2
51	2	sku-2	2
52	2	sku-2	2
53	2	sku-2	2
54	2	sku-2	2
55	2	sku-2	2
56	2	sku-2	2
57	2	sku-2	2
58	2	sku-2	2
59	2	sku-2	2
60	2	sku-2	2
61	2	sku-2	2
62	2	sku-2	2
63	2	sku-2	2
64	2	sku-2	2
65	2	sku-2	2
66	2	sku-2	2
67	2	sku-2	2
68	2	sku-2	2
69	2	sku-2	2
70	2	sku-2	2
71	2	sku-2	2
72	2	sku-2	2
73	2	sku-2	2
74	2	sku-2	2
75	2	sku-2	2
76	2	sku-2	2
77	2	sku-2	2
78	2	sku-2	2
79	2	sku-2	2
80	2	sku-2	2
81	2	sku-2	2
82	2	sku-2	2
83	2	sku-2	2
84	2	sku-2	2
85	2	sku-2	2
86	2	sku-2	2
87	2	sku-2	2
88	2	sku-2	2
89	2	sku-2	2
90	2	sku-2	2
91	2	sku-2	2
92	2	sku-2	2
93	2	sku-2	2
94	2	sku-2	2
95	2	sku-2	2
96	2	sku-2	2
97	2	sku-2	2
98	2	sku-2	2
99	2	sku-2	2
100	2	sku-2	2
101	2	sku-2	2
102	2	sku-2	2
103	2	sku-2	2
104	2	sku-2	2
105	2	sku-2	2
106	2	sku-2	2
107	2	sku-2	2
108	2	sku-2	2
109	2	sku-2	2
110	2	sku-2	2
111	2	sku-2	2
112	2	sku-2	2
113	2	sku-2	2
114	2	sku-2	2
115	2	sku-2	2
116	2	sku-2	2
117	2	sku-2	2
118	2	sku-2	2
119	2	sku-2	2
120	2	sku-2	2
121	2	sku-2	2
122	2	sku-2	2
123	2	sku-2	2
124	2	sku-2	2
125	2	sku-2	2
126	2	sku-2	2
127	2	sku-2	2
128	2	sku-2	2
129	2	sku-2	2
130	2	sku-2	2
131	2	sku-2	2
132	2	sku-2	2
133	2	sku-2	2
134	2	sku-2	2
135	2	sku-2	2
136	2	sku-2	2
137	2	sku-2	2
138	2	sku-2	2
139	2	sku-2	2
140	2	sku-2	2
141	2	sku-2	2
142	2	sku-2	2
143	2	sku-2	2
144	2	sku-2	2
145	2	sku-2	2
146	2	sku-2	2
147	2	sku-2	2
148	2	sku-2	2
149	2	sku-2	2
150	2	sku-2	2
151	2	sku-2	2
152	2	sku-2	2
153	2	sku-2	2
154	2	sku-2	2
155	2	sku-2	2
156	2	sku-2	2
157	2	sku-2	2
158	2	sku-2	2
159	2	sku-2	2
160	2	sku-2	2
161	2	sku-2	2
162	2	sku-2	2
163	2	sku-2	2
164	2	sku-2	2
165	2	sku-2	2
166	2	sku-2	2
167	2	sku-2	2
168	2	sku-2	2
169	2	sku-2	2
170	2	sku-2	2
171	2	sku-2	2
172	2	sku-2	2
173	2	sku-2	2
174	2	sku-2	2
175	2	sku-2	2
176	2	sku-2	2
177	2	sku-2	2
178	2	sku-2	2
179	2	sku-2	2
180	2	sku-2	2
181	2	sku-2	2
182	2	sku-2	2
183	2	sku-2	2
184	2	sku-2	2
185	2	sku-2	2
186	2	sku-2	2
187	2	sku-2	2
188	2	sku-2	2
189	2	sku-2	2
190	2	sku-2	2
191	2	sku-2	2
192	2	sku-2	2
193	2	sku-2	2
194	2	sku-2	2
195	2	sku-2	2
196	2	sku-2	2
197	2	sku-2	2
198	2	sku-2	2
199	2	sku-2	2
200	2	sku-2	2
1	3	sku-3	3
2	3	sku-3	3
3	3	sku-3	3
4	3	sku-3	3
5	3	sku-3	3
6	3	sku-3	3
7	3	sku-3	3
8	3	sku-3	3
9	3	sku-3	3
10	3	sku-3	3
11	3	sku-3	3
12	3	sku-3	3
13	3	sku-3	3
14	3	sku-3	3
15	3	sku-3	3
16	3	sku-3	3
17	3	sku-3	3
18	3	sku-3	3
19	3	sku-3	3
20	3	sku-3	3
21	3	sku-3	3
22	3	sku-3	3
23	3	sku-3	3
24	3	sku-3	3
25	3	sku-3	3
26	3	sku-3	3
27	3	sku-3	3
28	3	sku-3	3
29	3	sku-3	3
30	3	sku-3	3
31	3	sku-3	3
32	3	sku-3	3
33	3	sku-3	3
34	3	sku-3	3
35	3	sku-3	3
36	3	sku-3	3
37	3	sku-3	3
38	3	sku-3	3
39	3	sku-3	3
40	3	sku-3	3
41	3	sku-3	3
42	3	sku-3	3
43	3	sku-3	3
44	3	sku-3	3
45	3	sku-3	3
46	3	sku-3	3
47	3	sku-3	3
48	3	sku-3	3
49	3	sku-3	3
50	3	sku-3	3
51	3	sku-3	3
52	3	sku-3	3
53	3	sku-3	3
54	3	sku-3	3
55	3	sku-3	3
56	3	sku-3	3
57	3	sku-3	3
58	3	sku-3	3
59	3	sku-3	3
60	3	sku-3	3
61	3	sku-3	3
62	3	sku-3	3
63	3	sku-3	3
64	3	sku-3	3
65	3	sku-3	3
66	3	sku-3	3
67	3	sku-3	3
68	3	sku-3	3
69	3	sku-3	3
70	3	sku-3	3
71	3	sku-3	3
72	3	sku-3	3
73	3	sku-3	3
74	3	sku-3	3
75	3	sku-3	3
76	3	sku-3	3
77	3	sku-3	3
78	3	sku-3	3
79	3	sku-3	3
80	3	sku-3	3
81	3	sku-3	3
82	3	sku-3	3
83	3	sku-3	3
84	3	sku-3	3
85	3	sku-3	3
86	3	sku-3	3
87	3	sku-3	3
88	3	sku-3	3
89	3	sku-3	3
90	3	sku-3	3
91	3	sku-3	3
92	3	sku-3	3
93	3	sku-3	3
94	3	sku-3	3
95	3	sku-3	3
96	3	sku-3	3
97	3	sku-3	3
98	3	sku-3	3
99	3	sku-3	3
100	3	sku-3	3
101	3	sku-3	3
102	3	sku-3	3
103	3	sku-3	3
104	3	sku-3	3
105	3	sku-3	3
106	3	sku-3	3
107	3	sku-3	3
108	3	sku-3	3
109	3	sku-3	3
110	3	sku-3	3
111	3	sku-3	3
112	3	sku-3	3
113	3	sku-3	3
114	3	sku-3	3
115	3	sku-3	3
116	3	sku-3	3
117	3	sku-3	3
118	3	sku-3	3
119	3	sku-3	3
120	3	sku-3	3
121	3	sku-3	3
122	3	sku-3	3
123	3	sku-3	3
124	3	sku-3	3
125	3	sku-3	3
126	3	sku-3	3
127	3	sku-3	3
128	3	sku-3	3
129	3	sku-3	3
130	3	sku-3	3
131	3	sku-3	3
132	3	sku-3	3
133	3	sku-3	3
134	3	sku-3	3
135	3	sku-3	3
136	3	sku-3	3
137	3	sku-3	3
138	3	sku-3	3
139	3	sku-3	3
140	3	sku-3	3
141	3	sku-3	3
142	3	sku-3	3
143	3	sku-3	3
144	3	sku-3	3
145	3	sku-3	3
146	3	sku-3	3
147	3	sku-3	3
148	3	sku-3	3
149	3	sku-3	3
150	3	sku-3	3
151	3	sku-3	3
152	3	sku-3	3
153	3	sku-3	3
154	3	sku-3	3
155	3	sku-3	3
156	3	sku-3	3
157	3	sku-3	3
158	3	sku-3	3
159	3	sku-3	3
160	3	sku-3	3
161	3	sku-3	3
162	3	sku-3	3
163	3	sku-3	3
164	3	sku-3	3
165	3	sku-3	3
166	3	sku-3	3
167	3	sku-3	3
168	3	sku-3	3
169	3	sku-3	3
170	3	sku-3	3
171	3	sku-3	3
172	3	sku-3	3
173	3	sku-3	3
174	3	sku-3	3
175	3	sku-3	3
176	3	sku-3	3
177	3	sku-3	3
178	3	sku-3	3
179	3	sku-3	3
180	3	sku-3	3
181	3	sku-3	3
182	3	sku-3	3
183	3	sku-3	3
184	3	sku-3	3
185	3	sku-3	3
186	3	sku-3	3
187	3	sku-3	3
188	3	sku-3	3
189	3	sku-3	3
190	3	sku-3	3
191	3	sku-3	3
192	3	sku-3	3
193	3	sku-3	3
194	3	sku-3	3
195	3	sku-3	3
196	3	sku-3	3
197	3	sku-3	3
198	3	sku-3	3
199	3	sku-3	3
200	3	sku-3	3
\.


--
-- Data for Name: orders; Type: TABLE DATA; Schema: public; Owner: pmdb
--

COPY public.orders (id, customer_id, total, state, note, placed) FROM stdin;
1	2	3.50	paid	\N	2024-01-02
2	3	7.00	shipped	\N	2024-01-03
3	4	10.50	new	\N	2024-01-04
4	5	14.00	paid	\N	2024-01-05
5	6	17.50	shipped	\N	2024-01-06
6	7	21.00	new	\N	2024-01-07
7	8	24.50	paid	tab\tand "quotes"	2024-01-08
8	9	28.00	shipped	\N	2024-01-09
9	10	31.50	new	\N	2024-01-10
10	11	35.00	paid	\N	2024-01-11
11	12	38.50	shipped	\N	2024-01-12
12	13	42.00	new	\N	2024-01-13
13	14	45.50	paid	\N	2024-01-14
14	15	49.00	shipped	tab\tand "quotes"	2024-01-15
15	16	52.50	new	\N	2024-01-16
16	17	56.00	paid	\N	2024-01-17
17	18	59.50	shipped	\N	2024-01-18
18	19	63.00	new	\N	2024-01-19
19	20	66.50	paid	\N	2024-01-20
20	21	70.00	shipped	\N	2024-01-21
21	22	73.50	new	tab\tand "quotes"	2024-01-22
22	23	77.00	paid	\N	2024-01-23
23	24	80.50	shipped	\N	2024-01-24
24	25	84.00	new	\N	2024-01-25
25	26	87.50	paid	\N	2024-01-26
26	27	91.00	shipped	\N	2024-01-27
27	28	94.50	new	\N	2024-01-28
28	29	98.00	paid	tab\tand "quotes"	2024-01-29
29	30	101.50	shipped	\N	2024-01-30
30	31	105.00	new	\N	2024-01-31
31	32	108.50	paid	\N	2024-02-01
32	33	112.00	shipped	\N	2024-02-02
33	34	115.50	new	\N	2024-02-03
34	35	119.00	paid	\N	2024-02-04
35	36	122.50	shipped	tab\tand "quotes"	2024-02-05
36	37	126.00	new	\N	2024-02-06
37	38	129.50	paid	\N	2024-02-07
38	39	133.00	shipped	\N	2024-02-08
39	40	136.50	new	\N	2024-02-09
40	41	140.00	paid	\N	2024-02-10
41	42	143.50	shipped	\N	2024-02-11
42	43	147.00	new	tab\tand "quotes"	2024-02-12
43	44	150.50	paid	\N	2024-02-13
44	45	154.00	shipped	\N	2024-02-14
45	46	157.50	new	\N	2024-02-15
46	47	161.00	paid	\N	2024-02-16
47	48	164.50	shipped	\N	2024-02-17
48	49	168.00	new	\N	2024-02-18
49	50	171.50	paid	tab\tand "quotes"	2024-02-19
50	1	175.00	shipped	\N	2024-02-20
51	2	178.50	new	\N	2024-02-21
52	3	182.00	paid	\N	2024-02-22
53	4	185.50	shipped	\N	2024-02-23
54	5	189.00	new	\N	2024-02-24
55	6	192.50	paid	\N	2024-02-25
56	7	196.00	shipped	tab\tand "quotes"	2024-02-26
57	8	199.50	new	\N	2024-02-27
58	9	203.00	paid	\N	2024-02-28
59	10	206.50	shipped	\N	2024-02-29
60	11	210.00	new	\N	2024-03-01
61	12	213.50	paid	\N	2024-03-02
62	13	217.00	shipped	\N	2024-03-03
63	14	220.50	new	tab\tand "quotes"	2024-03-04
64	15	224.00	paid	\N	2024-03-05
65	16	227.50	shipped	\N	2024-03-06
66	17	231.00	new	\N	2024-03-07
67	18	234.50	paid	\N	2024-03-08
68	19	238.00	shipped	\N	2024-03-09
69	20	241.50	new	\N	2024-03-10
70	21	245.00	paid	tab\tand "quotes"	2024-03-11
71	22	248.50	shipped	\N	2024-03-12
72	23	252.00	new	\N	2024-03-13
73	24	255.50	paid	\N	2024-03-14
74	25	259.00	shipped	\N	2024-03-15
75	26	262.50	new	\N	2024-03-16
76	27	266.00	paid	\N	2024-03-17
77	28	269.50	shipped	tab\tand "quotes"	2024-03-18
78	29	273.00	new	\N	2024-03-19
79	30	276.50	paid	\N	2024-03-20
80	31	280.00	shipped	\N	2024-03-21
81	32	283.50	new	\N	2024-03-22
82	33	287.00	paid	\N	2024-03-23
83	34	290.50	shipped	\N	2024-03-24
84	35	294.00	new	tab\tand "quotes"	2024-03-25
85	36	297.50	paid	\N	2024-03-26
86	37	301.00	shipped	\N	2024-03-27
87	38	304.50	new	\N	2024-03-28
88	39	308.00	paid	\N	2024-03-29
89	40	311.50	shipped	\N	2024-03-30
90	41	315.00	new	\N	2024-03-31
91	42	318.50	paid	tab\tand "quotes"	2024-04-01
92	43	322.00	shipped	\N	2024-04-02
93	44	325.50	new	\N	2024-04-03
94	45	329.00	paid	\N	2024-04-04
95	46	332.50	shipped	\N	2024-04-05
96	47	336.00	new	\N	2024-04-06
97	48	339.50	paid	\N	2024-04-07
98	49	343.00	shipped	tab\tand "quotes"	2024-04-08
99	50	346.50	new	\N	2024-04-09
100	1	350.00	paid	\N	2024-04-10
101	2	353.50	shipped	\N	2024-04-11
102	3	357.00	new	\N	2024-04-12
103	4	360.50	paid	\N	2024-04-13
104	5	364.00	shipped	\N	2024-04-14
105	6	367.50	new	tab\tand "quotes"	2024-04-15
106	7	371.00	paid	\N	2024-04-16
107	8	374.50	shipped	\N	2024-04-17
108	9	378.00	new	\N	2024-04-18
109	10	381.50	paid	\N	2024-04-19
110	11	385.00	shipped	\N	2024-04-20
111	12	388.50	new	\N	2024-04-21
112	13	392.00	paid	tab\tand "quotes"	2024-04-22
113	14	395.50	shipped	\N	2024-04-23
114	15	399.00	new	\N	2024-04-24
115	16	402.50	paid	\N	2024-04-25
116	17	406.00	shipped	\N	2024-04-26
117	18	409.50	new	\N	2024-04-27
118	19	413.00	paid	\N	2024-04-28
119	20	416.50	shipped	tab\tand "quotes"	2024-04-29
120	21	420.00	new	\N	2024-04-30
121	22	423.50	paid	\N	2024-05-01
122	23	427.00	shipped	\N	2024-05-02
123	24	430.50	new	\N	2024-05-03
124	25	434.00	paid	\N	2024-05-04
125	26	437.50	shipped	\N	2024-05-05
126	27	441.00	new	tab\tand "quotes"	2024-05-06
127	28	444.50	paid	\N	2024-05-07
128	29	448.00	shipped	\N	2024-05-08
129	30	451.50	new	\N	2024-05-09
130	31	455.00	paid	\N	2024-05-10
131	32	458.50	shipped	\N	2024-05-11
132	33	462.00	new	\N	2024-05-12
133	34	465.50	paid	tab\tand "quotes"	2024-05-13
134	35	469.00	shipped	\N	2024-05-14
135	36	472.50	new	\N	2024-05-15
136	37	476.00	paid	\N	2024-05-16
137	38	479.50	shipped	\N	2024-05-17
138	39	483.00	new	\N	2024-05-18
139	40	486.50	paid	\N	2024-05-19
140	41	490.00	shipped	tab\tand "quotes"	2024-05-20
141	42	493.50	new	\N	2024-05-21
142	43	497.00	paid	\N	2024-05-22
143	44	500.50	shipped	\N	2024-05-23
144	45	504.00	new	\N	2024-05-24
145	46	507.50	paid	\N	2024-05-25
146	47	511.00	shipped	\N	2024-05-26
147	48	514.50	new	tab\tand "quotes"	2024-05-27
148	49	518.00	paid	\N	2024-05-28
149	50	521.50	shipped	\N	2024-05-29
150	1	525.00	new	\N	2024-05-30
151	2	528.50	paid	\N	2024-05-31
152	3	532.00	shipped	\N	2024-06-01
153	4	535.50	new	\N	2024-06-02
154	5	539.00	paid	tab\tand "quotes"	2024-06-03
155	6	542.50	shipped	\N	2024-06-04
156	7	546.00	new	\N	2024-06-05
157	8	549.50	paid	\N	2024-06-06
158	9	553.00	shipped	\N	2024-06-07
159	10	556.50	new	\N	2024-06-08
160	11	560.00	paid	\N	2024-06-09
161	12	563.50	shipped	tab\tand "quotes"	2024-06-10
162	13	567.00	new	\N	2024-06-11
163	14	570.50	paid	\N	2024-06-12
164	15	574.00	shipped	\N	2024-06-13
165	16	577.50	new	\N	2024-06-14
166	17	581.00	paid	\N	2024-06-15
167	18	584.50	shipped	\N	2024-06-16
168	19	588.00	new	tab\tand "quotes"	2024-06-17
169	20	591.50	paid	\N	2024-06-18
170	21	595.00	shipped	\N	2024-06-19
171	22	598.50	new	\N	2024-06-20
172	23	602.00	paid	\N	2024-06-21
173	24	605.50	shipped	\N	2024-06-22
174	25	609.00	new	\N	2024-06-23
175	26	612.50	paid	tab\tand "quotes"	2024-06-24
176	27	616.00	shipped	\N	2024-06-25
177	28	619.50	new	\N	2024-06-26
178	29	623.00	paid	\N	2024-06-27
179	30	626.50	shipped	\N	2024-06-28
180	31	630.00	new	\N	2024-06-29
181	32	633.50	paid	\N	2024-06-30
182	33	637.00	shipped	tab\tand "quotes"	2024-07-01
183	34	640.50	new	\N	2024-07-02
184	35	644.00	paid	\N	2024-07-03
185	36	647.50	shipped	\N	2024-07-04
186	37	651.00	new	\N	2024-07-05
187	38	654.50	paid	\N	2024-07-06
188	39	658.00	shipped	\N	2024-07-07
189	40	661.50	new	tab\tand "quotes"	2024-07-08
190	41	665.00	paid	\N	2024-07-09
191	42	668.50	shipped	\N	2024-07-10
192	43	672.00	new	\N	2024-07-11
193	44	675.50	paid	\N	2024-07-12
194	45	679.00	shipped	\N	2024-07-13
195	46	682.50	new	\N	2024-07-14
196	47	686.00	paid	tab\tand "quotes"	2024-07-15
197	48	689.50	shipped	\N	2024-07-16
198	49	693.00	new	\N	2024-07-17
199	50	696.50	paid	\N	2024-07-18
200	1	700.00	shipped	\N	2024-07-19
\.


--
-- Name: customers_id_seq; Type: SEQUENCE SET; Schema: public; Owner: pmdb
--

SELECT pg_catalog.setval('public.customers_id_seq', 50, true);


--
-- Name: invoice_no; Type: SEQUENCE SET; Schema: public; Owner: pmdb
--

SELECT pg_catalog.setval('public.invoice_no', 1000, true);


--
-- Name: orders_id_seq; Type: SEQUENCE SET; Schema: public; Owner: pmdb
--

SELECT pg_catalog.setval('public.orders_id_seq', 200, true);


--
-- Name: customers customers_email_key; Type: CONSTRAINT; Schema: public; Owner: pmdb
--

ALTER TABLE ONLY public.customers
    ADD CONSTRAINT customers_email_key UNIQUE (email);


--
-- Name: customers customers_pkey; Type: CONSTRAINT; Schema: public; Owner: pmdb
--

ALTER TABLE ONLY public.customers
    ADD CONSTRAINT customers_pkey PRIMARY KEY (id);


--
-- Name: items items_pkey; Type: CONSTRAINT; Schema: public; Owner: pmdb
--

ALTER TABLE ONLY public.items
    ADD CONSTRAINT items_pkey PRIMARY KEY (order_id, line);


--
-- Name: orders orders_pkey; Type: CONSTRAINT; Schema: public; Owner: pmdb
--

ALTER TABLE ONLY public.orders
    ADD CONSTRAINT orders_pkey PRIMARY KEY (id);


--
-- Name: orders_customer_idx; Type: INDEX; Schema: public; Owner: pmdb
--

CREATE INDEX orders_customer_idx ON public.orders USING btree (customer_id);


--
-- Name: items items_order_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: pmdb
--

ALTER TABLE ONLY public.items
    ADD CONSTRAINT items_order_id_fkey FOREIGN KEY (order_id) REFERENCES public.orders(id);


--
-- Name: orders orders_customer_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: pmdb
--

ALTER TABLE ONLY public.orders
    ADD CONSTRAINT orders_customer_id_fkey FOREIGN KEY (customer_id) REFERENCES public.customers(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--


